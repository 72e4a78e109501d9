#!/usr/bin/env python3
"""One row of bench/soak.sh's samples.tsv: the gateway process's resources
and in-flight gauges now.

    python3 bench/soak_sample.py --header
    python3 bench/soak_sample.py --pid PID --url ADMIN_URL --upstream-ports P,P --phase NAME

ADMIN_URL is the gateway's admin listener (its /metrics).

rss_kb (VmRSS), fds (/proc/PID/fd), upstream_fds (those of its TCP sockets
whose peer is one of the engines' ports: the kept-alive upstream
connections), threads, the sum of each in-flight gauge family of
src/gateway/gateway_metrics.hpp, and arbiter_requests_total.
"""
import argparse
import os
import time
import urllib.request

GAUGES = ["arbiter_requests_in_flight", "arbiter_backend_in_flight", "arbiter_class_in_flight",
          "arbiter_queue_depth", "arbiter_tenant_queue_depth", "arbiter_quota_in_flight",
          "arbiter_quota_reserved_tokens", "arbiter_request_body_bytes"]
COUNTERS = ["arbiter_requests_total"]
COLUMNS = ["unix_time", "phase", "rss_kb", "fds", "upstream_fds", "threads"] + GAUGES + COUNTERS


def status_field(pid, name):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(name + ":"):
                return int(line.split()[1])
    return -1


def socket_inodes(pid):
    inodes, fds = set(), 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        fds += 1
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if link.startswith("socket:["):
            inodes.add(link[8:-1])
    return fds, inodes


def upstream_sockets(pid, inodes, ports):
    n = 0
    for table in ("tcp", "tcp6"):
        try:
            with open(f"/proc/{pid}/net/{table}") as f:
                next(f)
                for line in f:
                    cols = line.split()
                    peer_port = int(cols[2].split(":")[1], 16)
                    if cols[9] in inodes and peer_port in ports:
                        n += 1
        except OSError:
            pass
    return n


def metric_sums(url):
    sums = {name: 0.0 for name in GAUGES + COUNTERS}
    try:
        with urllib.request.urlopen(url + "/metrics", timeout=3) as r:
            text = r.read().decode()
    except OSError:
        return {name: "NA" for name in sums}
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        name = line.split("{", 1)[0].split(" ", 1)[0]
        if name in sums:
            sums[name] += float(line.rsplit(" ", 1)[1])
    return {k: f"{v:g}" for k, v in sums.items()}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--header", action="store_true")
    p.add_argument("--pid", type=int)
    p.add_argument("--url")
    p.add_argument("--upstream-ports", default="")
    p.add_argument("--phase", default="")
    a = p.parse_args()
    if a.header:
        print("\t".join(COLUMNS))
        return
    ports = {int(x) for x in a.upstream_ports.split(",") if x}
    fds, inodes = socket_inodes(a.pid)
    row = [f"{time.time():.1f}", a.phase, str(status_field(a.pid, "VmRSS")), str(fds),
           str(upstream_sockets(a.pid, inodes, ports)), str(status_field(a.pid, "Threads"))]
    sums = metric_sums(a.url)
    print("\t".join(row + [sums[n] for n in GAUGES + COUNTERS]))


if __name__ == "__main__":
    main()
