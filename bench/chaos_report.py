#!/usr/bin/env python3
"""The chaos drills' figures and checks (bench/chaos.sh; docs/resilience.md,
"Chaos drills").

    python3 bench/chaos_report.py DRILL_DIR...

Each DRILL_DIR holds what bench/chaos.sh left of one drill: drill.json, the
per-request log (requests.jsonl, arbiter-bench live --requests-out), the
fault events (events.tsv: unix time, kind, details), live/results.json,
each simulator process's last /metrics (simI.K.metrics: engine I, K-th
process) and snapshots (snap-NAME-simI.metrics), the gateway's /metrics
after the load (gateway.metrics) and whether it was still up
(gateway.state). Prints two Markdown tables (figures per drill, then every
check with its kind and result), writes DRILL_DIR/summary.json, and exits
1 when a hard check failed.
"""
import glob
import json
import os
import re
import sys

ERROR_OUTCOMES = {"rejected", "dropped", "unfinished"}
COMMON_CHECKS = 4  # the first checks of every drill, printed as one row


def client_error(r):
    """What a client sees as a failure: a refusal (429, 503, any other
    status), a failed connection, a stream cut or ended by an error event,
    a run cut while still going, or an answer shorter or longer than asked.
    Superseded and cancelled requests are what the client asked for."""
    if r["outcome"] in ERROR_OUTCOMES:
        return True
    return r["outcome"] == "completed" and r["expected_tokens"] > 0 and r["tokens"] != r["expected_tokens"]


def read_metrics(path):
    """Prometheus text -> {(name, labels): value}."""
    out = {}
    if not os.path.exists(path):
        return out
    for line in open(path):
        m = re.match(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? ([0-9.eE+-]+|NaN)$", line.strip())
        if m:
            out[(m.group(1), m.group(2) or "")] = float(m.group(3))
    return out


def total(metrics, name, label_filter=""):
    return sum(v for (n, labels), v in metrics.items() if n == name and label_filter in labels)


def pct(n, d):
    return 100.0 * n / d if d else 0.0


class Drill:
    def __init__(self, d):
        self.dir = d
        self.info = json.load(open(os.path.join(d, "drill.json")))
        self.name = self.info["drill"]
        lines = open(os.path.join(d, "requests.jsonl")).read().splitlines()
        header = json.loads(lines[0]) if lines else {"run_start_unix": 0}
        self.start_unix = header["run_start_unix"]
        self.requests = [json.loads(l) for l in lines[1:] if l.strip()]
        self.events = []  # (run time, kind, details)
        events_path = os.path.join(d, "events.tsv")
        if os.path.exists(events_path):
            for line in open(events_path):
                parts = line.rstrip("\n").split(" ", 2)
                self.events.append((float(parts[0]) - self.start_unix, parts[1], parts[2] if len(parts) > 2 else ""))
        results = os.path.join(d, "live", "results.json")
        self.generated = None
        if os.path.exists(results):
            self.generated = json.load(open(results))["policies"][0]["all"]["generated"]
        self.gateway = read_metrics(os.path.join(d, "gateway.metrics"))
        state = os.path.join(d, "gateway.state")
        self.gateway_up = os.path.exists(state) and open(state).read().strip() == "up"
        # The last /metrics of every simulator process, and whether it lived to the end.
        self.instances = []
        for path in sorted(glob.glob(os.path.join(d, "sim*.*.metrics"))):
            m = re.match(r"sim(\d+)\.(\d+)\.metrics$", os.path.basename(path))
            if m:
                self.instances.append((int(m.group(1)), int(m.group(2)), read_metrics(path)))
        self.last_instance = {}
        for engine, k, _ in self.instances:
            self.last_instance[engine] = max(k, self.last_instance.get(engine, -1))

    def event_time(self, kind, details_has="", nth=0):
        hits = [t for t, k, d in self.events if k == kind and details_has in d]
        return hits[nth] if len(hits) > nth else None

    def snapshot(self, name):
        merged = {}
        for path in glob.glob(os.path.join(self.dir, f"snap-{name}-sim*.metrics")):
            for key, v in read_metrics(path).items():
                merged[(key[0], path + key[1])] = v
        return merged

    # The fault's window in run time, and the instant recovery counts from.
    def window(self):
        n = self.name
        if n in ("5xx_30", "5xx_100", "hang"):
            start, end = self.event_time("fault"), self.event_time("fault", nth=1)
            return start, end, start, "fault's start"
        if n == "all_down":
            start, end = self.event_time("kill-KILL"), self.event_time("restarted", nth=self.info["engines"] - 1)
            return start, end, end, "last restart"
        if n == "crash":
            start, end = self.event_time("kill-KILL"), self.event_time("restarted")
            return start, end, start, "kill"
        if n == "slow_start":
            start, restart = self.event_time("kill-TERM"), self.event_time("restarted")
            end = restart + self.info["fault"] if restart is not None else None
            return start, end, start, "SIGTERM"
        if n in ("all_fail", "vram_90"):
            engines = self.info["engines"]
            start, end = self.event_time("fault"), self.event_time("fault", nth=engines)
            return start, end, end, "fault's end"
        if n == "surge":
            start, end = self.event_time("surge"), self.event_time("surge-end")
            return start, end, end, "surge's end"
        return None, None, None, ""

    def analyse(self):
        reqs = self.requests
        errors = [r for r in reqs if client_error(r)]
        classes = sorted({r["class"] for r in reqs}, key=lambda c: [x["class"] for x in reqs].index(c))
        by_class = {}
        for c in classes:
            mine = [r for r in reqs if r["class"] == c]
            bad = [r for r in mine if client_error(r)]
            by_class[c] = {"requests": len(mine), "errors": len(bad), "error_pct": pct(len(bad), len(mine))}
        start, end, ref, ref_name = self.window()
        recovery, recovered = None, True
        if ref is not None:
            late = [r["arrival"] for r in errors if start is not None and r["arrival"] >= start]
            recovery = max(0.0, max(late) - ref) if late else 0.0
            # Routing around a fault: errors that go on into the last fifth
            # of the fault's window mean it was never routed around.
            if ref == start and late and end is not None and max(late) >= start + 0.8 * (end - start):
                recovered = False
        # Work lost: engine work for requests aborted in an engine (client
        # gone, preempted or superseded by the gateway, crash fault), net of
        # prompt blocks a later request reused, plus the work held by a
        # process when it was stopped.
        lost = work = received = 0.0
        for engine, k, m in self.instances:
            lost += total(m, "arbiter_sim_wasted_tokens_total") - total(m, "arbiter_sim_wasted_tokens_reused_total")
            work += total(m, "arbiter_sim_prefill_tokens_computed_total") + total(m, "vllm:generation_tokens_total")
            received += total(m, "arbiter_sim_requests_received_total")
            if k < self.last_instance[engine]:  # stopped and replaced mid-run
                lost += total(m, "arbiter_sim_in_flight_work_tokens")
        sent = [r for r in reqs if not r["note"].startswith("not sent")]
        summary = {
            "drill": self.name,
            "form": self.info["form"],
            "description": self.info["description"],
            "requests": len(reqs),
            "generated": self.generated,
            "errors": len(errors),
            "error_pct": pct(len(errors), len(reqs)),
            "by_class": by_class,
            "unfinished": sum(r["outcome"] == "unfinished" for r in reqs),
            "work_lost_tokens": lost,
            "work_tokens": work,
            "work_lost_pct": pct(lost, work),
            "upstream_attempts": received,
            "client_requests_sent": len(sent),
            "fault_start": start,
            "fault_end": end,
            "recovery_s": recovery,
            "recovered_during_fault": recovered,
            "recovery_from": ref_name,
            "error_notes": {},
        }
        for r in errors:
            note = r["note"] or (f"HTTP {r['status']}" if r["status"] else r["outcome"])
            if r["outcome"] == "completed":
                note = "answer of the wrong length"
            summary["error_notes"][note] = summary["error_notes"].get(note, 0) + 1
        summary["ttft_p99_s"] = {}  # per class: before the fault, during it
        for c in classes:
            def p99(lo, hi):
                t = sorted(r["first_token"] - r["arrival"] for r in reqs
                           if r["class"] == c and lo <= r["arrival"] < hi and r["first_token"] >= 0)
                return t[min(len(t) - 1, int(0.99 * len(t)))] if t else None
            if start is not None and end is not None:
                summary["ttft_p99_s"][c] = [p99(0, start), p99(start, end)]
        summary.update(self.extra(start, end))
        summary["checks"] = self.checks(summary)
        return summary

    # Drill-specific figures.
    def extra(self, start, end):
        out = {}
        reqs = self.requests
        if self.name == "crash" and start is not None:
            victim = "sim1"
            cut = [r for r in reqs if r["backend"] == victim and r["arrival"] < start and r["ended"] >= start
                   and r["first_token"] >= 0]
            resumable = [r for r in cut if r["class"] == "batch"]
            others = [r for r in cut if r["class"] != "batch"]
            out["streams_on_victim"] = len(cut)
            out["resumable_on_victim"] = len(resumable)
            out["resumable_completed_in_full"] = sum(not client_error(r) and r["outcome"] == "completed"
                                                     for r in resumable)
            out["others_on_victim"] = len(others)
            out["others_ended"] = sum(r["outcome"] != "unfinished" for r in others)
        if self.name in ("crash", "slow_start") and end is not None:
            victim = "sim1" if self.name == "crash" else "sim2"
            out["served_by_victim_after"] = sum(r["backend"] == victim and r["arrival"] >= end + 1
                                                and r["outcome"] == "completed" for r in reqs)
        if self.name in ("all_fail", "all_down") and start is not None and end is not None:
            during = [r for r in reqs if start <= r["arrival"] < end]
            out["fault_requests"] = len(during)
            # How long a client sent during the fault waited for an answer:
            # its first token, else the end of its request (an error).
            waits = sorted((r["first_token"] if r["first_token"] >= 0 else r["ended"]) - r["arrival"]
                           for r in during if r["ended"] >= 0)
            out["fault_answer_p99_s"] = waits[min(len(waits) - 1, int(0.99 * len(waits)))] if waits else 0
        if self.name == "all_fail" and start is not None and end is not None:
            # Upstream attempts between the two snapshots, against client
            # requests sent between the first's start and the second's end.
            before, after = self.snapshot("fault-start"), self.snapshot("fault-end")
            out["fault_upstream_attempts"] = total(after, "arbiter_sim_requests_received_total") - \
                total(before, "arbiter_sim_requests_received_total")
            lo, hi = self.event_time("snapshot", "fault-start"), self.event_time("snapshot-done", "fault-end")
            out["fault_window_requests"] = sum(lo <= r["arrival"] < hi for r in reqs) if None not in (lo, hi) else 0
        if self.name == "vram_90":
            g = self.gateway
            out["gateway_preemptions"] = total(g, "arbiter_scheduler_events_total", 'event="preempted"')
            out["gateway_resumed"] = total(g, "arbiter_requests_resumed_total")
            out["engine_preemptions"] = sum(total(m, "vllm:num_preemptions_total") for _, _, m in self.instances)
            # KV use (mean over the engines) before the fault and half-way through it.
            for name in ("fault-start", "mid-fault"):
                snap = self.snapshot(name)
                values = [v for (n, _), v in snap.items() if n == "vllm:kv_cache_usage_perc"]
                out[f"kv_use_{name}"] = sum(values) / len(values) if values else None
        return out

    def checks(self, s):
        """(name, kind, passed): kind 'hard' fails the run; 'report' is shown."""
        c = []
        c.append(("every request ends (none cut at the drain)", "hard", s["unfinished"] == 0))
        c.append(("one outcome per request generated", "hard",
                  s["generated"] is not None and s["generated"] == s["requests"]))
        c.append(("the gateway stays up", "hard", self.gateway_up))
        gauges = [v for (n, _), v in self.gateway.items()
                  if n in ("arbiter_requests_in_flight", "arbiter_backend_in_flight", "arbiter_class_in_flight",
                           "arbiter_queue_depth")]
        c.append(("gateway in-flight gauges and queues back to 0", "hard", bool(gauges) and all(v == 0 for v in gauges)))
        rec = s["recovery_s"]
        cls = s["by_class"]
        n = self.name
        routed_around = s["recovered_during_fault"]
        if n in ("5xx_30", "5xx_100"):
            c.append(("client errors < 0.5%", "hard", s["error_pct"] < 0.5))
            c.append(("errors stop within 2 s of the fault's start (ejection)", "report",
                      routed_around and rec is not None and rec <= 2))
        if n == "hang":
            c.append(("client errors < 0.5%", "report", s["error_pct"] < 0.5))
            c.append(("errors stop within 5 s of the fault's start (3 s first-byte time-out + 2 s)", "report",
                      routed_around and rec is not None and rec <= 5))
        if n == "crash":
            c.append(("resumable streams cut by the kill complete in full elsewhere", "hard",
                      s.get("resumable_on_victim", 0) == s.get("resumable_completed_in_full", 0)))
            c.append(("errors stop within 1 s of the kill", "report", routed_around and rec is not None and rec <= 1))
            c.append(("the restarted engine serves again", "report", s.get("served_by_victim_after", 0) > 0))
        if n == "slow_start":
            c.append(("client errors < 0.5%", "hard", s["error_pct"] < 0.5))
            c.append(("the restarted engine serves again after its slow start", "report",
                      s.get("served_by_victim_after", 0) > 0))
        if n == "all_fail":
            c.append(("errors stop within 2 s of the fault's end", "report", rec is not None and rec <= 2))
            c.append(("upstream attempts <= 1.1x client requests during the fault (retry budget)", "hard",
                      s.get("fault_upstream_attempts", 0) <= 1.1 * s.get("fault_window_requests", 0)))
            c.append(("requests sent during the fault answered within 1 s (P99: first token or error)", "report",
                      s.get("fault_answer_p99_s", 0) <= 1))
        if n == "all_down":
            c.append(("fail fast: requests sent while no engine is up answered within 1 s (P99: first token or "
                      "error)", "report", s.get("fault_answer_p99_s", 0) <= 1))
            c.append(("errors stop within 2 s of the engines' restart", "report", rec is not None and rec <= 2))
        ttft = s["ttft_p99_s"].get("critical", [None, None])[1]
        if n == "surge":
            c.append(("critical: 0 failures", "hard", cls.get("critical", {}).get("errors", 1) == 0))
            c.append(("critical: TTFT P99 within its 300 ms SLO during the surge", "report",
                      ttft is not None and ttft <= 0.3))
            c.append(("errors stop within 5 s of the surge's end", "report", rec is not None and rec <= 5))
        if n == "cancel_storm":
            c.append(("client errors < 0.1%", "hard", s["error_pct"] < 0.1))
        if n == "vram_90":
            c.append(("low-priority work paused by the gateway (its preemptions), not by the engines", "report",
                      s.get("gateway_preemptions", 0) > 0))
            c.append(("critical: 0 failures", "report", cls.get("critical", {}).get("errors", 1) == 0))
            c.append(("critical: TTFT P99 within its 300 ms SLO during the fault", "report",
                      ttft is not None and ttft <= 0.3))
            c.append(("batch: 0 failures (paused, not lost)", "report", cls.get("batch", {}).get("errors", 1) == 0))
        return [{"check": name, "kind": kind, "passed": bool(ok)} for name, kind, ok in c]


def fmt_s(v):
    return "n/a" if v is None else f"{v:.1f} s"


def fmt_tokens(v):
    return f"{v / 1e6:.2f}M" if v >= 1e6 else f"{v / 1e3:.1f}k" if v >= 1e3 else f"{v:.0f}"


def notes(s):
    n = s["drill"]
    out = []
    if n == "crash" and "streams_on_victim" in s:
        out.append(f"{s['streams_on_victim']} streams on the killed engine: {s['resumable_on_victim']} resumable, "
                   f"{s['resumable_completed_in_full']} of them completed in full; "
                   f"{s['others_ended']} of {s['others_on_victim']} others ended")
    if n in ("crash", "slow_start") and "served_by_victim_after" in s:
        out.append(f"{s['served_by_victim_after']} served by the restarted engine after it was back")
    if n in ("all_fail", "all_down") and "fault_requests" in s:
        attempts = (f"; {s['fault_upstream_attempts']:.0f} upstream attempts for {s['fault_window_requests']} "
                    "client requests" if "fault_upstream_attempts" in s else "")
        out.append(f"during the fault: {s['fault_requests']} requests{attempts}, answered (first token or error) "
                   f"in {s['fault_answer_p99_s']:.2f} s at P99")
    if n == "vram_90":
        kv = [s.get("kv_use_fault-start"), s.get("kv_use_mid-fault")]
        if None not in kv:
            out.append(f"KV use {100 * kv[0]:.0f}% before, {100 * kv[1]:.0f}% of what is left during")
        out.append(f"{s['gateway_preemptions']:.0f} gateway preemptions, {s['gateway_resumed']:.0f} resumed, "
                   f"{s['engine_preemptions']:.0f} engine preemptions")
    if n in ("surge", "vram_90") and s["ttft_p99_s"]:
        def ms(v):
            return "-" if v is None else f"{1000 * v:.0f}"
        out.append("TTFT P99 before / during, ms: " +
                   ", ".join(f"{c} {ms(v[0])} / {ms(v[1])}" for c, v in s["ttft_p99_s"].items()))
    if s["error_notes"]:
        top = sorted(s["error_notes"].items(), key=lambda kv: -kv[1])[:3]
        out.append("errors: " + ", ".join(f"{k} x{v}" for k, v in top))
    return "; ".join(out)


def main(dirs):
    summaries = []
    for d in dirs:
        s = Drill(d).analyse()
        json.dump(s, open(os.path.join(d, "summary.json"), "w"), indent=1)
        summaries.append(s)
    print("| drill | fault | requests | client errors | errors by class | work lost | recovery | notes |")
    print("|---|---|---:|---:|---|---:|---|---|")
    for s in summaries:
        by_class = ", ".join(f"{c} {v['errors']} ({v['error_pct']:.1f}%)" for c, v in s["by_class"].items())
        rec = fmt_s(s["recovery_s"]) + (f" from the {s['recovery_from']}" if s["recovery_s"] is not None else "")
        if not s["recovered_during_fault"]:
            rec = f"none: errors until the fault ended ({s['fault_end'] - s['fault_start']:.1f} s)"
        print(f"| {s['drill']} | {s['description']} | {s['requests']} | {s['errors']} ({s['error_pct']:.2f}%) | "
              f"{by_class} | {fmt_tokens(s['work_lost_tokens'])} ({s['work_lost_pct']:.1f}%) | {rec} | {notes(s)} |")
    print()
    print("| drill | target | kind | result |")
    print("|---|---|---|---|")
    failed_hard = 0
    for s in summaries:
        common = s["checks"][:COMMON_CHECKS]
        failed = [c["check"] for c in common if not c["passed"]]
        print(f"| {s['drill']} | every request ends; one outcome each; the gateway stays up; its in-flight "
              f"gauges and queues back to 0 | hard | {'pass' if not failed else '**FAIL**: ' + '; '.join(failed)} |")
        failed_hard += bool(failed)
        for c in s["checks"][COMMON_CHECKS:]:
            result = "pass" if c["passed"] else "**FAIL**"
            if c["kind"] == "hard" and not c["passed"]:
                failed_hard += 1
            print(f"| {s['drill']} | {c['check']} | {c['kind']} | {result} |")
    if failed_hard:
        print(f"\nchaos: {failed_hard} hard check(s) failed", file=sys.stderr)
    return 1 if failed_hard else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
