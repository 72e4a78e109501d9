#!/usr/bin/env python3
"""The access-log table of `ACCESS_LOG=1 bench/overhead.sh` (issue 17).

usage: access_log_report.py RESULTS.jsonl NGINX_LOG ARBITER_LOG DROPPED [BEFORE_LOG]

From the merged closed-loop runs of one overhead run: each proxy's CPU per
request and throughput with its access log off and on, what the log adds,
and the targets (arbiter's log adds <= 1 us of CPU per request; arbiter with
its log >= 0.9x nginx with its log). When the log paths also ran in the open
loop, the CPU the log adds at that fixed rate too: there both paths make the
same number of wake-ups a second, where in the closed loop a path that gets
more throughput also gets more requests per wake-up, and so less CPU per
request; the target is judged on the fixed rate then. "before+log", when measured, is an
arbiter from before issue 17 (one write(2) per line) against the same
"arbiter" with its log off. Prints Markdown.
"""
import json
import sys

TARGET_ADDED_CPU_US = 1.0
TARGET_RATIO = 0.9


def closed_runs(path, mode="closed"):
    runs = {}
    with open(path) as f:
        for line in f:
            if line.strip():
                run = json.loads(line)
                if run.get("mode") == mode:
                    runs[run["label"]] = run
    return runs


def cpu_us(run):
    completed = run.get("completed", 0)
    cpu = run.get("cpu_s", {}).get("proxy")
    return cpu * 1e6 / completed if cpu is not None and completed > 0 else None


def lines_in(path, prefix=b""):
    """Lines of `path` that start with `prefix` (arbiter's stdout file also has its events)."""
    try:
        with open(path, "rb") as f:
            return sum(1 for line in f if line.startswith(prefix))
    except OSError:
        return None


def main():
    results, nginx_log, arbiter_log, dropped = sys.argv[1:5]
    before_log = sys.argv[5] if len(sys.argv) > 5 else None
    runs = closed_runs(results)
    out = ["What the access log adds (closed loop; proxy CPU µs/req and req/s from the table above):", "",
           "| Proxy | CPU µs/req, log off | log on | added by the log | req/s, log off | log on | on/off |",
           "|---|---:|---:|---:|---:|---:|---:|"]
    added = {}
    for proxy, off_label in (("nginx", "nginx"), ("arbiter", "arbiter"), ("before", "arbiter")):
        off, on = runs.get(off_label), runs.get(proxy + "+log")
        if not off or not on:
            continue
        c_off, c_on = cpu_us(off), cpu_us(on)
        added[proxy] = c_on - c_off if c_off is not None and c_on is not None else None
        r_off, r_on = off["throughput_rps"], on["throughput_rps"]
        out.append(f"| {proxy} | {c_off:.1f} | {c_on:.1f} | {added[proxy]:+.1f} | {r_off:.0f} | {r_on:.0f} | "
                   f"{r_on / r_off:.2f}x |")
    out.append("")
    open_runs = closed_runs(results, "open")
    fixed = {}
    for proxy in ("nginx", "arbiter"):
        off, on = open_runs.get(proxy), open_runs.get(proxy + "+log")
        if off and on and cpu_us(off) is not None and cpu_us(on) is not None:
            fixed[proxy] = (cpu_us(off), cpu_us(on))
    if fixed:
        rate = open_runs[next(iter(fixed))].get("rate", 0)
        out += [f"At a fixed {rate:.0f} req/s (open loop; proxy CPU µs/req):", "",
                "| Proxy | log off | log on | added by the log |", "|---|---:|---:|---:|"]
        out += [f"| {p} | {off:.1f} | {on:.1f} | {on - off:+.1f} |" for p, (off, on) in fixed.items()]
        out.append("")
    if "arbiter+log" in runs and "nginx+log" in runs and added.get("arbiter") is not None:
        ratio = runs["arbiter+log"]["throughput_rps"] / runs["nginx+log"]["throughput_rps"]
        a, where = added["arbiter"], "closed loop"
        if "arbiter" in fixed:
            a, where = fixed["arbiter"][1] - fixed["arbiter"][0], "fixed rate"
        n = fixed["nginx"][1] - fixed["nginx"][0] if "nginx" in fixed and where == "fixed rate" else added["nginx"]
        out.append(f"- arbiter's access log adds {a:+.1f} µs of CPU per request at the {where} (target <= "
                   f"{TARGET_ADDED_CPU_US:g}: {'met' if a <= TARGET_ADDED_CPU_US else 'missed'}); nginx's adds {n:+.1f}.")
        out.append(f"- arbiter with its log: {ratio:.2f}x the throughput of nginx with its log "
                   f"(target >= {TARGET_RATIO:g}x: {'met' if ratio >= TARGET_RATIO else 'missed'}).")
    n, a = lines_in(nginx_log), lines_in(arbiter_log, b'{"ts"')
    before = lines_in(before_log, b'{"ts"') if before_log and "before+log" in runs else None
    out.append(f"- Lines written (every request of the run, warm-ups included): nginx {n}, arbiter {a}"
               + (f", before {before}" if before is not None else "")
               + f"; arbiter_access_log_dropped_total at the end: {dropped}.")
    print("\n".join(out))


if __name__ == "__main__":
    main()
