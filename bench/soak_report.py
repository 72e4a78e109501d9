#!/usr/bin/env python3
"""bench/soak.sh's figures and checks.

    python3 bench/soak_report.py --minutes N --upstream-bound B SOAK_DIR

SOAK_DIR holds samples.tsv (bench/soak_sample.py: phases start, baseline,
load, end), the per-request logs of the warm-up and the measured run
(requests-warmup.jsonl, requests-soak.jsonl), the fault events
(events.tsv) and the gateway's last /metrics (gateway.metrics). Prints
Markdown (before/after figures, traffic, checks) and exits 1 when a check
failed. The checks and their tolerances:

- every in-flight gauge back to 0 at the end;
- fds other than kept-alive upstream connections back to the baseline,
  +2 (a health or metrics client connection the gateway is still closing);
  kept-alive upstream connections at most B (bench/soak.sh: the upstream
  pool keeps at most max_concurrency idle per engine and I/O thread, and
  drops them only when next asked, so their count at rest depends on the
  last burst, not on a leak);
- RSS at the end at most the baseline + max(10%, 16 MB): tcmalloc keeps
  memory freed after a surge in its caches and returns it to the system
  slowly, so RSS after a burst settles a little above the baseline
  without anything leaking;
- no steady growth: the least-squares slope of RSS over the second half of
  the load below 1 MB/min (checked from 10 minutes of load on; shown
  always).
"""
import argparse
import collections
import json
import os
import sys

IN_FLIGHT = ["arbiter_requests_in_flight", "arbiter_backend_in_flight", "arbiter_class_in_flight",
             "arbiter_queue_depth", "arbiter_tenant_queue_depth", "arbiter_quota_in_flight",
             "arbiter_quota_reserved_tokens", "arbiter_request_body_bytes"]
SLOPE_LIMIT_MB_MIN = 1.0
RSS_TOLERANCE = (0.10, 16 * 1024)  # fraction, KB
FD_TOLERANCE = 2


def read_samples(path):
    with open(path) as f:
        head = f.readline().rstrip("\n").split("\t")
        return [dict(zip(head, line.rstrip("\n").split("\t"))) for line in f if line.strip()]


def read_requests(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        rows = [json.loads(line) for line in f if line.strip()]
    return [r for r in rows if "outcome" in r]


def slope_mb_per_min(points):
    """Least-squares slope of (seconds, KB) points, in MB per minute."""
    n = len(points)
    if n < 3:
        return 0.0
    mx = sum(t for t, _ in points) / n
    my = sum(v for _, v in points) / n
    sxx = sum((t - mx) ** 2 for t, _ in points)
    sxy = sum((t - mx) * (v - my) for t, v in points)
    return (sxy / sxx) * 60 / 1024 if sxx else 0.0


def gateway_counters(path):
    """Answers by status, scheduler events (preempted, superseded,
    cancelled), resumes, retries, ejections and upstream errors, summed."""
    sums = collections.Counter()
    if not os.path.exists(path):
        return "none"
    with open(path) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            name, value = line.rsplit(" ", 1)
            v = float(value)
            if name.startswith("arbiter_requests_total{"):
                sums["HTTP " + name.split('status="')[1].split('"')[0]] += v
            elif name.startswith("arbiter_scheduler_events_total{"):
                event = name.split('event="')[1].split('"')[0]
                if event in ("preempted", "superseded_queued", "superseded_in_flight", "cancelled_queued",
                             "cancelled_in_flight", "expired"):
                    sums[event] += v
            elif name.startswith("arbiter_requests_resumed_total{"):
                sums["resumed"] += v
            elif name.startswith("arbiter_retries_total{"):
                kind = name.split('kind="')[1].split('"')[0]
                sums[{"retry": "retries"}.get(kind, kind + "s")] += v
            elif name.startswith("arbiter_backend_ejections_total{"):
                sums["ejections"] += v
            elif name.startswith("arbiter_upstream_errors_total{"):
                sums["upstream errors"] += v
    return ", ".join(f"{k} {int(v)}" for k, v in sorted(sums.items())) or "none"


def mb(kb):
    return f"{int(kb) / 1024:.1f}"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--minutes", type=float, required=True)
    p.add_argument("--upstream-bound", type=int, required=True)
    p.add_argument("dir")
    a = p.parse_args()
    samples = read_samples(os.path.join(a.dir, "samples.tsv"))
    by_phase = collections.defaultdict(list)
    for s in samples:
        by_phase[s["phase"]].append(s)
    base, end = by_phase["baseline"][-1], by_phase["end"][-1]
    load = [s for s in samples if s["phase"] == "load" and s["rss_kb"] != "-1"]
    t0 = float(base["unix_time"])

    def others(s):
        return int(s["fds"]) - int(s["upstream_fds"])

    rows = [("RSS (MB)", mb(base["rss_kb"]), mb(max(int(s["rss_kb"]) for s in load) if load else 0), mb(end["rss_kb"])),
            ("open fds", base["fds"], max(int(s["fds"]) for s in load) if load else "", end["fds"]),
            ("  of which kept-alive upstream", base["upstream_fds"],
             max(int(s["upstream_fds"]) for s in load) if load else "", end["upstream_fds"]),
            ("threads", base["threads"], max(int(s["threads"]) for s in load) if load else "", end["threads"])]
    for g in IN_FLIGHT:
        peak = max((float(s[g]) for s in load if s[g] != "NA"), default=0)
        rows.append((f"`{g}` (sum)", base[g], f"{peak:g}", end[g]))
    print("| | baseline | peak under load | end |")
    print("|---|---|---|---|")
    for r in rows:
        print("| " + " | ".join(str(x) for x in r) + " |")
    print()

    half = [s for s in load if float(s["unix_time"]) >= (float(load[0]["unix_time"]) + float(load[-1]["unix_time"])) / 2] if load else []
    slope = slope_mb_per_min([(float(s["unix_time"]) - t0, int(s["rss_kb"])) for s in half])
    slope_all = slope_mb_per_min([(float(s["unix_time"]) - t0, int(s["rss_kb"])) for s in load])
    print(f"{len(load)} samples under load; RSS slope over the second half {slope:+.2f} MB/min "
          f"({len(half)} samples), over the whole load {slope_all:+.2f} MB/min.")
    print()

    reqs = read_requests(os.path.join(a.dir, "requests-soak.jsonl"))
    warm = read_requests(os.path.join(a.dir, "requests-warmup.jsonl"))
    outcomes = collections.Counter(r["outcome"] for r in reqs)
    errors = collections.Counter((r["note"] or (f"HTTP {r['status']}" if r["status"] else r["outcome"]))
                                 for r in reqs if r["outcome"] in ("rejected", "dropped", "unfinished"))
    faults = collections.Counter()
    with open(os.path.join(a.dir, "events.tsv")) as f:
        for line in f:
            parts = line.split(" ", 3)
            if parts[1] == "fault" and '":0}' not in line:
                faults["error burst" if "error_rate" in line else "hang" if "hang_rate" in line else "other"] += 1
            elif parts[1] == "kill-KILL":
                faults["crash + restart"] += 1
    print(f"Measured run: {len(reqs)} requests ({len(warm)} more in the warm-up); outcomes: "
          + ", ".join(f"{k} {v}" for k, v in sorted(outcomes.items())) + ".")
    print("Errors seen by clients, by kind: " + (", ".join(f"{k} {v}" for k, v in errors.most_common()) or "none") + ".")
    print("Gateway counters (the process's life: warm-up and run): " + gateway_counters(os.path.join(a.dir, "gateway.metrics")) + ".")
    print("Faults injected: " + (", ".join(f"{k} {v}" for k, v in sorted(faults.items())) or "none") + ".")
    print()

    checks = []
    up = end["arbiter_requests_in_flight"] != "NA"
    checks.append(("the gateway answers /metrics at the end", up))
    busy = [g for g in IN_FLIGHT if end[g] not in ("0", "NA")]
    checks.append(("every in-flight gauge back to 0" + (f" (not: {', '.join(busy)})" if busy else ""), up and not busy))
    checks.append((f"fds other than upstream keep-alive: end {others(end)} <= baseline {others(base)} + {FD_TOLERANCE}",
                   others(end) <= others(base) + FD_TOLERANCE))
    checks.append((f"kept-alive upstream connections at the end {end['upstream_fds']} <= {a.upstream_bound} (pool bound)",
                   int(end["upstream_fds"]) <= a.upstream_bound))
    limit = int(base["rss_kb"]) + max(RSS_TOLERANCE[0] * int(base["rss_kb"]), RSS_TOLERANCE[1])
    checks.append((f"RSS at the end {mb(end['rss_kb'])} MB <= baseline {mb(base['rss_kb'])} MB + max(10%, 16 MB)",
                   int(end["rss_kb"]) <= limit))
    enforce = a.minutes >= 10
    checks.append((f"RSS slope over the second half {slope:+.2f} MB/min < {SLOPE_LIMIT_MB_MIN} MB/min"
                   + ("" if enforce else " (shown only: under 10 minutes of load)"),
                   slope < SLOPE_LIMIT_MB_MIN or not enforce))
    checks.append((f"every request of the run ended ({outcomes.get('unfinished', 0)} unfinished)",
                   outcomes.get("unfinished", 0) == 0 and len(reqs) > 0))
    print("| check | result |")
    print("|---|---|")
    for name, ok in checks:
        print(f"| {name} | {'pass' if ok else '**FAIL**'} |")
    sys.exit(0 if all(ok for _, ok in checks) else 1)


if __name__ == "__main__":
    main()
