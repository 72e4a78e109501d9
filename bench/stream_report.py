#!/usr/bin/env python3
"""The streaming overhead run's own tables (`STREAM=1 bench/overhead.sh`, issue 17).

usage: stream_report.py spread ROUNDS.jsonl   one paced phase, round by round
       stream_report.py ttft RESULTS.jsonl    first events against plain requests

spread: each round's added TTFT p50 and added ITL p50/p99 (the path's figure
minus the direct path's in the same round, measured seconds apart), as the
range over the rounds, with the proxy's CPU per event: how far one pooled
figure can be trusted on a shared machine.

ttft: from the merged open-loop runs "PATH+plain" (a non-streaming request)
and "PATH+stream" (the same body asking for a stream whose first event the
upstream sends at once): the plain request's added latency (send to full
response, p50, minus direct's) against the stream's added time to first event
(send to first event, p50, minus direct's), and the target (arbiter's within
50 us of its plain added latency). Prints Markdown.
"""
import json
import sys

TARGET_TTFT_GAP_US = 50.0


def read(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def spread(path):
    rounds = {}  # label -> [run of round 1, round 2, ...]
    for run in read(path):
        rounds.setdefault(run["label"], []).append(run)
    direct = rounds.get("direct")
    if not direct:
        return
    head = direct[0]
    per_event = lambda r: r["cpu_s"]["proxy"] * 1e6 / r["events"] if r.get("events") and "proxy" in r["cpu_s"] else None
    out = [f"Round by round ({len(direct)} rounds of {head['duration_s']:g} s, {head['connections']} streams; "
           "added = the path's figure minus direct's in the same round; min to max over the rounds, µs):", "",
           "| Path | added TTFT p50 | added ITL p50 | added ITL p99 | direct ITL p99 | proxy CPU µs/event |",
           "|---|---:|---:|---:|---:|---:|"]

    def span(values, fmt="{:+.0f}"):
        return fmt.format(min(values)) + " to " + fmt.format(max(values)) if values else "-"

    for label, runs in rounds.items():
        if label == "direct":
            continue
        # A round that completed no stream (an overloaded machine) has no percentiles.
        pairs = [(r, d) for r, d in zip(runs, direct) if r["completed"] and d["completed"]]
        empty = f" ({len(runs) - len(pairs)} of {len(runs)} rounds without a completed stream)" if len(pairs) < len(runs) else ""
        added = lambda what, p: [r[what][p] - d[what][p] for r, d in pairs]
        cpu = [c for c in (per_event(r) for r, _ in pairs) if c is not None]
        out.append(f"| {label}{empty} | {span(added('ttft_us', 'p50'))} | {span(added('itl_us', 'p50'))} | "
                   f"{span(added('itl_us', 'p99'))} | {span([d['itl_us']['p99'] for _, d in pairs], '{:.0f}')} | "
                   f"{span(cpu, '{:.1f}')} |")
    print("\n".join(out))


def ttft(path):
    runs = {run["label"]: run for run in read(path)}
    if "direct+plain" not in runs or "direct+stream" not in runs:
        return
    head = runs["direct+plain"]
    d_plain, d_ttft = runs["direct+plain"]["service_us"], runs["direct+stream"]["ttft_us"]
    out = [f"First event against a plain request (open loop at {head['rate']:g} req/s, {head['connections']} "
           f"connections, {head['duration_s']:g} s a path in {head.get('rounds', 1)} interleaved rounds; plain: "
           "send to full response; stream: send to first event; µs):", "",
           "| Path | plain p50 | p99 | added p50 | stream TTFT p50 | p99 | added p50 | added TTFT - added plain |"
           " errors |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    gaps = {}
    for proxy in [label[:-len("+plain")] for label in runs if label.endswith("+plain")]:
        plain, stream = runs[proxy + "+plain"]["service_us"], runs.get(proxy + "+stream", {}).get("ttft_us")
        if stream is None:
            continue
        errors = runs[proxy + "+plain"]["errors"] + runs[proxy + "+stream"]["errors"]
        if proxy == "direct":
            out.append(f"| direct | {plain['p50']:.0f} | {plain['p99']:.0f} | - | {stream['p50']:.0f} | "
                       f"{stream['p99']:.0f} | - | - | {errors} |")
            continue
        added_plain, added_ttft = plain["p50"] - d_plain["p50"], stream["p50"] - d_ttft["p50"]
        gaps[proxy] = added_ttft - added_plain
        out.append(f"| {proxy} | {plain['p50']:.0f} | {plain['p99']:.0f} | {added_plain:+.0f} | {stream['p50']:.0f} | "
                   f"{stream['p99']:.0f} | {added_ttft:+.0f} | {gaps[proxy]:+.0f} | {errors} |")
    out.append("")
    if "arbiter" in gaps:
        gap = gaps["arbiter"]
        met = abs(gap) <= TARGET_TTFT_GAP_US
        nginx = f"; nginx's: {gaps['nginx']:+.0f} µs" if "nginx" in gaps else ""
        out.append(f"- arbiter's added TTFT p50 is {gap:+.0f} µs from its plain added latency (target within "
                   f"{TARGET_TTFT_GAP_US:.0f} µs: {'met' if met else 'missed'}){nginx}.")
    print("\n".join(out))


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("spread", "ttft"):
        sys.exit(__doc__)
    (spread if sys.argv[1] == "spread" else ttft)(sys.argv[2])


if __name__ == "__main__":
    main()
