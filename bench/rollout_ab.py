#!/usr/bin/env python3
"""Issue 45's two latency checks against a real gateway and arbiter-sim
engines, each an interleaved A/B in one run (docs/benchmarks.md, "Config
reload and rollouts"):

shadow: two aliases over the same model and engine, `mirrored` (every
  request also sent to a shadow model on an engine of its own) and `plain`
  (no shadow); arrivals alternate between them. The real answers' time to
  first token and total time, per arm: the shadow must not change them.
  The shadow comparison report (GET /admin/rollouts) is written to
  --report.

reload: steady load, in alternating phases of --phase seconds: quiet, then
  a config reload (POST /admin/config, two texts in turn) every
  --reload-every seconds. Time to first token per phase kind, and the
  failed requests (there must be none).

Open-loop Poisson arrivals; streamed chat, temperature 0.

usage: python3 bench/rollout_ab.py shadow|reload [--build build] [--rate 40] [--seconds 60] [--seed 1]
"""
import argparse
import http.client
import tempfile
import threading
import time

from bench_procs import drive, print_arms, start_gateway, start_sim, stop_all


def admin(port, method, path, body=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    c.request(method, path, body)
    r = c.getresponse()
    return r.status, r.read().decode()


def config_text(sim_port, shadow_port=None, max_concurrency=64):
    text = ("listener: {address: 127.0.0.1, port: 0, threads: 1}\nadmin: {port: 0}\nauth: {enabled: false}\n"
            "log: {access_log: false}\ncache: {enabled: false}\n"
            f"models:\n  - name: m1\n    backends: [{{url: 'http://127.0.0.1:{sim_port}', max_concurrency: {max_concurrency}}}]\n")
    if shadow_port:
        text += (f"  - name: m1-shadow\n    backends: [{{url: 'http://127.0.0.1:{shadow_port}', max_concurrency: 256}}]\n"
                 "aliases:\n"
                 "  - {name: mirrored, targets: [{model: m1}], shadow: {model: m1-shadow, share: 1, max_concurrency: 256}}\n"
                 "  - {name: plain, targets: [{model: m1}]}\n")
    return text


def run(args):
    tmp = tempfile.mkdtemp(prefix="arbiter-rollout.")
    procs = []
    try:
        sim, sim_port = start_sim(args.build, tmp, "sim", "m1")
        procs.append(sim)
        shadow_port = None
        if args.mode == "shadow":
            shadow, shadow_port = start_sim(args.build, tmp, "shadow", "m1-shadow")
            procs.append(shadow)
        gateway, port, admin_port = start_gateway(args.build, tmp, config_text(sim_port, shadow_port))
        procs.append(gateway)
        if args.mode == "shadow":
            results = drive(port, args.rate, args.seconds, args.seed,
                            lambda i, t: ("mirrored", "mirrored") if i % 2 == 0 else ("plain", "plain"))
            status, report = admin(admin_port, "GET", "/admin/rollouts")
            if args.report:
                with open(args.report, "w") as f:
                    f.write(report + "\n")
            print(f"shadow report: {report}")
        else:
            stop = threading.Event()
            reloads = {"applied": 0, "other": 0}

            def reloader():
                texts = [config_text(sim_port, max_concurrency=64), config_text(sim_port, max_concurrency=48)]
                n = 0
                start = time.monotonic()
                while not stop.is_set():
                    phase = int((time.monotonic() - start) / args.phase)
                    if phase % 2 == 1:
                        status, body = admin(admin_port, "POST", "/admin/config", texts[n % 2] + f"# {n}\n")
                        reloads["applied" if status == 200 and '"applied"' in body else "other"] += 1
                        n += 1
                    stop.wait(args.reload_every)

            thread = threading.Thread(target=reloader)
            thread.start()
            results = drive(port, args.rate, args.seconds, args.seed,
                            lambda i, t: ("reloading" if int(t / args.phase) % 2 == 1 else "quiet", "m1"))
            stop.set()
            thread.join()
            print(f"reloads: {reloads}")
        a, b = ("mirrored", "plain") if args.mode == "shadow" else ("reloading", "quiet")
        print_arms(results, a, b)
    finally:
        stop_all(procs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["shadow", "reload"])
    ap.add_argument("--build", default="build")
    ap.add_argument("--rate", type=float, default=40)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--phase", type=float, default=5, help="reload: seconds per phase")
    ap.add_argument("--reload-every", type=float, default=0.2, help="reload: seconds between reloads")
    ap.add_argument("--report", help="shadow: where the comparison report goes")
    run(ap.parse_args())


if __name__ == "__main__":
    main()
