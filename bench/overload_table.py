#!/usr/bin/env python3
"""Issue 43's overload table: each scenario run virtually with three arrival
seeds (its own and the next two), one row per policy, the median of the
three and their range. Failed = rejected + dropped + cancelled + unfinished,
over the requests not superseded (DECISIONS.md D3's failures); goodput counts
whole answers of the model within their SLO, degraded goodput the capped
answers and the degraded variant's that would otherwise be (docs/overload.md);
degraded shares are of the answered.

usage: python3 bench/overload_table.py BUILD_DIR SCENARIO.yaml..."""
import json
import pathlib
import statistics
import subprocess
import sys
import tempfile


def figures(policy, duration):
    a = policy["all"]
    o = a["outcomes"]
    answered = a["generated"] - o["superseded"]
    failed = lambda g: (g["outcomes"]["rejected"] + g["outcomes"]["dropped"] + g["outcomes"]["cancelled"]
                        + g["outcomes"]["unfinished"]) / max(1, g["generated"] - g["outcomes"]["superseded"])
    critical = next(c for c in policy["classes"] if c["name"] == "critical")
    return {
        "failed": 100 * failed(a),
        "critical failed": 100 * failed(critical),
        "goodput req/s": a["goodput_rps"],
        "degraded goodput req/s": a["good_degraded"] / duration,
        "critical TTFT P99 ms": critical["ttft_ms"]["p99"],
        "capped %": 100 * a["capped"] / max(1, answered),
        "variant %": 100 * a["variant"] / max(1, answered),
        "shed %": 100 * a["shed"] / max(1, answered),
    }


def main():
    build, scenarios = pathlib.Path(sys.argv[1]), sys.argv[2:]
    for scenario in scenarios:
        seed = int(next(l.split(":")[1] for l in open(scenario) if l.startswith("seed:")))
        runs = {}
        for s in range(seed, seed + 3):
            with tempfile.TemporaryDirectory() as out:
                subprocess.run([build / "arbiter-bench", "virtual", "--scenario", scenario, "--out", out,
                                "--seed", str(s), "--jobs", "2"], check=True, capture_output=True)
                results = json.load(open(pathlib.Path(out) / "results.json"))
            for p in results["policies"]:
                runs.setdefault(p["policy"], []).append(figures(p, results["duration_s"]))
        names = list(next(iter(runs.values()))[0].keys())
        print(f"\n{pathlib.Path(scenario).stem}, seeds {seed}-{seed + 2} (median, range):\n")
        print("| policy | " + " | ".join(names) + " |")
        print("|---|" + "---:|" * len(names))
        for policy, rows in runs.items():
            cells = []
            for n in names:
                v = sorted(r[n] for r in rows)
                digits = 0 if "ms" in n else 2
                cells.append(f"{statistics.median(v):.{digits}f} ({v[0]:.{digits}f}-{v[-1]:.{digits}f})")
            print(f"| {policy} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
