#!/usr/bin/env python3
"""Memory per queued request (docs/benchmarks.md, "What a queued request holds").

One arbiter-sim engine with one slot behind build/arbiter; N client
connections each send one non-streamed chat request with a prompt of
--prompt-bytes and wait, so all but one queue in the gateway. Prints the
gateway's RSS before and with them queued, per queued request, and
arbiter_request_body_bytes, as one JSON line. --preemptible puts them in a
preemptible class (a preemption may resume them, so the gateway reads how
from the body's document).

    python3 bench/queued_memory.py [--requests N] [--prompt-bytes B] [--preemptible] [BUILD_DIR]
"""
import argparse
import json
import os
import socket
import subprocess
import tempfile
import time
import urllib.request


def wait_port(path, proc):
    for _ in range(400):
        if os.path.exists(path) and os.path.getsize(path) > 0:
            return int(open(path).read().split()[0])
        if proc.poll() is not None:
            raise SystemExit(f"queued_memory: {proc.args[0]} exited with {proc.returncode}")
        time.sleep(0.05)
    raise SystemExit(f"queued_memory: no {path}")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("build", nargs="?", default="build")
    p.add_argument("--requests", type=int, default=2000)
    p.add_argument("--prompt-bytes", type=int, default=16384)
    p.add_argument("--preemptible", action="store_true")
    a = p.parse_args()
    d = tempfile.mkdtemp(prefix="arbiter-queued.")
    sim = subprocess.Popen([f"{a.build}/arbiter-sim", "--port", "0", "--port-file", f"{d}/sim.ports",
                            "--profile", "llama-8b-a100", "--model", "m", "--max-num-seqs", "1",
                            "--step-time-scale", "200"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    gateway = None
    try:
        sim_port = wait_port(f"{d}/sim.ports", sim)
        preemptible = "true" if a.preemptible else "false"
        with open(f"{d}/gateway.yaml", "w") as f:
            f.write("listener: {address: 127.0.0.1, port: 0}\n"
                    "admin: {port: 0}\n"
                    "log: {access_log: false}\n"
                    "classes:\n"
                    f"  - {{name: bulk, max_share: 1, max_queue: 100000, max_queue_per_tenant: 100000,"
                    f" max_queue_wait_ms: 600000, preemptible: {preemptible}}}\n"
                    "default_class: bulk\n"
                    "models:\n"
                    "  - name: m\n"
                    "    backends:\n"
                    f"      - {{name: s, url: http://127.0.0.1:{sim_port}, max_concurrency: 1,"
                    " continue_final_message: true}\n")
        gateway = subprocess.Popen([f"{a.build}/arbiter", "--config", f"{d}/gateway.yaml", "--port-file",
                                    f"{d}/gateway.port", "--admin-port-file", f"{d}/admin.port"],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        port = wait_port(f"{d}/gateway.port", gateway)
        admin_port = wait_port(f"{d}/admin.port", gateway)

        def rss_kb():
            with open(f"/proc/{gateway.pid}/status") as f:
                return int(next(line for line in f if line.startswith("VmRSS")).split()[1])

        def metric(name):
            text = urllib.request.urlopen(f"http://127.0.0.1:{admin_port}/metrics", timeout=5).read().decode()
            return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                       if line.startswith(name + "{") or line.startswith(name + " "))

        words = ("context " * (a.prompt_bytes // 8 + 1))[:a.prompt_bytes]
        body = json.dumps({"model": "m", "messages": [{"role": "user", "content": words}],
                           "max_tokens": 1000}).encode()
        request = (b"POST /v1/chat/completions HTTP/1.1\r\nHost: gateway\r\nContent-Type: application/json\r\n"
                   b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)

        def send(n):
            conns = []
            for _ in range(n):
                s = socket.create_connection(("127.0.0.1", port))
                s.sendall(request)
                conns.append(s)
            return conns

        # What any first requests allocate belongs in the baseline.
        for s in send(20):
            s.close()
        time.sleep(3)
        before = rss_kb()
        conns = send(a.requests)
        deadline = time.time() + 60
        while metric("arbiter_queue_depth") < a.requests - 1 and time.time() < deadline:
            time.sleep(0.1)
        time.sleep(2)
        queued, held, with_them = metric("arbiter_queue_depth"), metric("arbiter_request_body_bytes"), rss_kb()
        for s in conns:
            s.close()
        print(json.dumps({"preemptible": a.preemptible, "requests": a.requests, "prompt_bytes": a.prompt_bytes,
                          "queued": int(queued), "request_body_bytes": int(held), "rss_before_kb": before,
                          "rss_with_kb": with_them, "kb_per_request": round((with_them - before) / a.requests, 1)}))
    finally:
        for proc in (gateway, sim):
            if proc:
                proc.terminate()
                proc.wait()


if __name__ == "__main__":
    main()
