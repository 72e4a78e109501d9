#!/usr/bin/env python3
"""The perf-stat tables of `ACCESS_LOG=1 bench/request_cost.sh` (issue 17).

usage: request_cost_report.py PERF.tsv
       request_cost_report.py callgrind DUMP

callgrind DUMP: from one callgrind dump, four numbers: instructions in all,
the estimated cycles in all, and the same two inclusive in the access log's
own functions (the observer's on_complete on the request thread, the writer
thread's loop). The cycle estimate is callgrind's (KCachegrind's "CEst"):
instructions + 10 per L1 miss + 100 per last-level miss, with no overlap, so
pessimistic; it is the instructions again without --cache-sim=yes.

PERF.tsv: one row per proxy and round (proxy, round, requests, instructions,
cycles, task_clock_ms; a counter the machine lacks reads "<not supported>").
Prints, per proxy, instructions, cycles, the clock rate they imply
(cycles / task-clock) and task-clock per request, each as the median over the
rounds with the range; then what the access log adds per request, log on
minus log off within each round (the rounds are interleaved, so a round's
pair saw the same machine), median and range: in CPU time by cycles at the
median clock rate of all the counts where there are cycles, and by task-clock
always.
"before+log" (an older arbiter with its log on) and "arbiter+variant" (VARIANT's
config) are set against "arbiter".
Prints Markdown.
"""
import csv
import re
import statistics
import subprocess
import sys

TARGET_ADDED_US = 1.0
PAIRS = (("arbiter+log", "arbiter"), ("before+log", "arbiter"), ("nginx+log", "nginx"), ("arbiter+variant", "arbiter"))
LOG_FUNCTIONS = ("AccessLogObserver::on_complete(", "BatchedLineWriter::run()")


def estimated_cycles(counts):
    get = lambda *keys: sum(counts.get(k, 0) for k in keys)
    return get("Ir") + 10 * get("I1mr", "D1mr", "D1mw") + 100 * get("ILmr", "DLmr", "DLmw")


def callgrind_counts(dump):
    """(instructions, estimated cycles) of the whole dump and of the log's functions, inclusive."""
    text = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", dump],
                          capture_output=True, text=True, check=True).stdout
    events, total, own = [], None, [0, 0]
    for line in text.splitlines():
        if line.startswith("Events shown:"):
            events = line.split(":", 1)[1].split()
        is_total = "PROGRAM TOTALS" in line
        if not is_total and not any(f in line for f in LOG_FUNCTIONS):
            continue
        figures = re.sub(r"\([^)]*\)", "", line.split("PROGRAM TOTALS")[0].split("???:")[0]).split()
        counts = dict(zip(events, (0 if f == "." else int(f.replace(",", "")) for f in figures)))
        if is_total:
            total = (counts.get("Ir", 0), estimated_cycles(counts))
        else:
            own[0] += counts.get("Ir", 0)
            own[1] += estimated_cycles(counts)
    return total + tuple(own)


def number(text):
    try:
        return float(text)
    except (TypeError, ValueError):
        return None  # "<not supported>", "<not counted>" or missing


def read(path):
    rounds = {}  # proxy -> round -> figures per request
    with open(path) as f:
        for row in csv.DictReader(f, delimiter="\t"):
            n = number(row["requests"])
            if not n:
                continue
            ins, cyc, ms = (number(row[k]) for k in ("instructions", "cycles", "task_clock_ms"))
            rounds.setdefault(row["proxy"], {})[row["round"]] = {
                "instructions": ins / n if ins is not None else None,
                "cycles": cyc / n if cyc is not None else None,
                "ghz": cyc / (ms * 1e6) if cyc is not None and ms else None,
                "task_us": ms * 1e3 / n if ms is not None else None,
            }
    # Cycles to time at one clock rate, the median of every count's: a round's
    # own rate would give its task-clock back, noise included.
    rates = [f["ghz"] for by_round in rounds.values() for f in by_round.values() if f["ghz"]]
    ghz = statistics.median(rates) if rates else None
    for by_round in rounds.values():
        for f in by_round.values():
            f["cycles_us"] = f["cycles"] / (ghz * 1e3) if ghz and f["cycles"] is not None else None
    return rounds, ghz


def spread(values, fmt):
    values = [v for v in values if v is not None]
    if not values:
        return "n/a"
    text = fmt(statistics.median(values))
    return f"{text} ({fmt(min(values))} to {fmt(max(values))})" if len(values) > 1 else text


def thousands(v):
    return f"{v / 1000:.1f}k"


def micros(v):
    return f"{v:+.2f}"


def main():
    if sys.argv[1] == "callgrind":
        print(*callgrind_counts(sys.argv[2]))
        return
    rounds, ghz = read(sys.argv[1])
    out = ["| proxy | instructions/request | cycles/request | clock GHz | task-clock µs/request |",
           "|---|---:|---:|---:|---:|"]
    for proxy, by_round in rounds.items():
        figures = list(by_round.values())
        col = lambda key: [f[key] for f in figures]
        out.append(f"| {proxy} | {spread(col('instructions'), thousands)} | {spread(col('cycles'), thousands)} | "
                   f"{spread(col('ghz'), lambda v: f'{v:.2f}')} | {spread(col('task_us'), lambda v: f'{v:.2f}')} |")
    out += ["", f"Cycles to time at {ghz:.2f} GHz, the median clock rate of every count (cycles / task-clock)." if ghz else
            "No cycles: this machine exposes no hardware counters to perf (a VM without a virtual PMU); "
            "the time column is task-clock, wall-clock CPU time and as noisy as the machine.",
            "", "What the access log (or VARIANT) adds per request (on minus off, round by round; median and range):", "",
            "| with | instructions | cycles | CPU µs by cycles | CPU µs by task-clock | target <= 1 µs |",
            "|---|---:|---:|---:|---:|---|"]
    for on, off in PAIRS:
        if on not in rounds or off not in rounds:
            continue
        both = [r for r in rounds[on] if r in rounds[off]]
        diff = lambda key: [None if rounds[on][r][key] is None or rounds[off][r][key] is None
                            else rounds[on][r][key] - rounds[off][r][key] for r in both]
        by_cycles = [v for v in diff("cycles_us") if v is not None]
        by_task = [v for v in diff("task_us") if v is not None]
        basis = by_cycles or by_task
        if not basis:
            verdict = "n/a"
        elif max(basis) <= TARGET_ADDED_US:
            verdict = "met in every round"
        elif statistics.median(basis) <= TARGET_ADDED_US:
            verdict = "median met, not every round"
        else:
            verdict = "missed"
        verdict += " (by cycles)" if by_cycles else " (by task-clock)" if by_task else ""
        out.append(f"| {on} | {spread(diff('instructions'), lambda v: f'{v / 1000:+.1f}k')} | "
                   f"{spread(diff('cycles'), lambda v: f'{v / 1000:+.1f}k')} | {spread(by_cycles, micros)} | "
                   f"{spread(by_task, micros)} | {verdict} |")
    print("\n".join(out))


if __name__ == "__main__":
    main()
