#!/usr/bin/env python3
"""Issue 46's "no request slows while the store is down", against a real
gateway and an arbiter-sim engine, as an interleaved A/B in one run
(docs/benchmarks.md, "Usage and audit store"): steady open-loop load in
alternating phases of --phase seconds, the store up, then the store out
(another process holds the SQLite file's write lock for the whole phase,
so every batch the writer tries fails and the rows spool in the journal).
Time to first token and total time per phase kind, and the failed requests
(there must be none); the spool's rows at the end (0: drained).

usage: python3 bench/store_outage.py [--build build] [--rate 40] [--seconds 60] [--phase 10] [--seed 1]
"""
import argparse
import http.client
import re
import subprocess
import tempfile
import threading
import time

from bench_procs import drive, print_arms, start_gateway, start_sim, stop_all


def spool_rows(admin_port):
    c = http.client.HTTPConnection("127.0.0.1", admin_port, timeout=10)
    c.request("GET", "/metrics")
    text = c.getresponse().read().decode()
    m = re.search(r"^arbiter_store_spool_rows (\S+)$", text, re.M)
    return float(m.group(1)) if m else float("nan")


def run(args):
    tmp = tempfile.mkdtemp(prefix="arbiter-store-outage.")
    procs = []
    try:
        sim, sim_port = start_sim(args.build, tmp)
        procs.append(sim)
        db = f"{tmp}/arbiter.db"
        gateway, port, admin_port = start_gateway(
            args.build, tmp,
            "listener: {address: 127.0.0.1, port: 0, threads: 1}\nadmin: {port: 0}\nauth: {enabled: false}\n"
            f"log: {{access_log: false}}\ncache: {{enabled: false}}\nstore: {{path: '{db}'}}\n"
            f"models:\n  - name: m1\n    backends: [{{url: 'http://127.0.0.1:{sim_port}', max_concurrency: 64}}]\n")
        procs.append(gateway)
        stop = threading.Event()
        outages = []

        def locker():
            start = time.monotonic()
            while not stop.is_set():
                phase = int((time.monotonic() - start) / args.phase)
                ends = start + (phase + 1) * args.phase
                if phase % 2 == 1:  # the store out: its write lock held to the phase's end
                    lock = subprocess.Popen(["sqlite3", db, "BEGIN EXCLUSIVE;", f".shell sleep {args.phase + 5}"],
                                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                    stop.wait(max(0.0, ends - time.monotonic()))
                    outages.append(spool_rows(admin_port))
                    lock.kill()
                    lock.wait()
                else:
                    stop.wait(max(0.0, ends - time.monotonic()))

        thread = threading.Thread(target=locker)
        thread.start()
        results = drive(port, args.rate, args.seconds, args.seed,
                        lambda i, t: ("store_out" if int(t / args.phase) % 2 == 1 else "store_up", "m1"))
        stop.set()
        thread.join()
        deadline = time.monotonic() + 30
        while spool_rows(admin_port) > 0 and time.monotonic() < deadline:
            time.sleep(0.2)
        print(f"spool rows at each outage's end: {outages}; after the run: {spool_rows(admin_port):.0f}")
        print_arms(results, "store_out", "store_up")
    finally:
        stop_all(procs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--rate", type=float, default=40)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--phase", type=float, default=10, help="seconds per phase")
    ap.add_argument("--seed", type=int, default=1)
    run(ap.parse_args())


if __name__ == "__main__":
    main()
