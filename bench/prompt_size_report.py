#!/usr/bin/env python3
"""The large-prompt table of the default `bench/overhead.sh` run (issue 17).

usage: prompt_size_report.py RESULTS.jsonl BODY_BYTES BIG_BODY_BYTES

From the merged closed-loop runs: nginx's and arbiter's CPU per request and
throughput with the run's usual body ("nginx", "arbiter") and with the large
one ("nginx+64k", "arbiter+64k"), and the target (arbiter's CPU per request
with the large prompt <= 1.5x nginx's). Prints Markdown.
"""
import sys

from access_log_report import closed_runs, cpu_us

TARGET_CPU_RATIO = 1.5


def main():
    results, small, big = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    runs = closed_runs(results)
    out = [f"What a {big // 1024} KiB prompt costs (closed loop; proxy CPU µs/req and req/s from the table above):",
           "",
           f"| Proxy | CPU µs/req, {small} B body | {big} B body | req/s, {small} B | {big} B |",
           "|---|---:|---:|---:|---:|"]
    cpu = {}
    for proxy in ("nginx", "arbiter"):
        small_run, big_run = runs.get(proxy), runs.get(proxy + "+64k")
        if not small_run or not big_run:
            return print("\n".join(out[:1] + ["", "(not measured)"]))
        cpu[proxy] = cpu_us(big_run)
        out.append(f"| {proxy} | {cpu_us(small_run):.1f} | {cpu[proxy]:.1f} | {small_run['throughput_rps']:.0f} | "
                   f"{big_run['throughput_rps']:.0f} |")
    out.append("")
    ratio = cpu["arbiter"] / cpu["nginx"]
    throughput = runs["arbiter+64k"]["throughput_rps"] / runs["nginx+64k"]["throughput_rps"]
    out.append(f"- With a {big // 1024} KiB prompt arbiter takes {ratio:.2f}x nginx's CPU per request (target <= "
               f"{TARGET_CPU_RATIO:g}x: {'met' if ratio <= TARGET_CPU_RATIO else 'missed'}) and reaches "
               f"{throughput:.2f}x its throughput.")
    print("\n".join(out))


if __name__ == "__main__":
    main()
