"""Process and request helpers the live bench scripts share (cache_rag.py, rollout_ab.py,
store_outage.py): a gateway's port, a streamed chat timed to its first token, open-loop
arrivals split into arms, and the arms' latency table."""
import http.client
import json
import math
import os
import random
import re
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor


def wait_port_file(path, proc, seconds=20):
    """The port a process wrote to `path` (--port-file); exits when it died or wrote none in time."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        if os.path.exists(path) and os.path.getsize(path) > 0:
            return int(re.findall(r"\d+", open(path).read())[0])
        if proc.poll() is not None:
            sys.exit(f"{proc.args[0]} exited")
        time.sleep(0.05)
    sys.exit(f"no port file {path}")


def start_sim(build, tmp, name="sim", model="m1"):
    """An arbiter-sim engine (profile llama-8b-a100) serving `model`, its port file in `tmp`:
    the process and its port."""
    proc = subprocess.Popen([f"{build}/arbiter-sim", "--port", "0", "--port-file", f"{tmp}/{name}.port", "--model", model,
                             "--profile", "llama-8b-a100"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return proc, wait_port_file(f"{tmp}/{name}.port", proc)


def start_gateway(build, tmp, config_text):
    """The gateway on `config_text` (written to `tmp`/arbiter.yaml): the process, its port and
    its admin listener's port."""
    with open(f"{tmp}/arbiter.yaml", "w") as f:
        f.write(config_text)
    proc = subprocess.Popen([f"{build}/arbiter", "--config", f"{tmp}/arbiter.yaml", "--port-file", f"{tmp}/arbiter.port",
                             "--admin-port-file", f"{tmp}/admin.port"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return proc, wait_port_file(f"{tmp}/arbiter.port", proc), wait_port_file(f"{tmp}/admin.port", proc)


def stop_all(procs):
    """Stops the processes started for a run, the last started first."""
    for p in reversed(procs):
        p.terminate()
        p.wait()


def stream_chat(port, body, start):
    """POSTs a chat completion to the gateway on `port` and reads its answer to the end: the
    response (status, headers), its body, and the seconds from `start` (time.monotonic())
    to the first content token (None when none came)."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    c.request("POST", "/v1/chat/completions", json.dumps(body), {"content-type": "application/json"})
    r = c.getresponse()
    ttft = None
    buffer = b""
    while True:
        chunk = r.read1(65536)
        if not chunk:
            break
        buffer += chunk
        if ttft is None and re.search(rb'"content":"[^"]', buffer):
            ttft = time.monotonic() - start
    c.close()
    return r, buffer, ttft


def one(port, model, prompt):
    body = {"model": model, "messages": [{"role": "user", "content": prompt}], "max_tokens": 32, "temperature": 0,
            "stream": True}
    start = time.monotonic()
    try:
        r, buffer, ttft = stream_chat(port, body, start)
        ok = r.status == 200 and b"[DONE]" in buffer
    except OSError:
        ok, ttft = False, None
    total = time.monotonic() - start
    return {"ok": ok, "ttft_ms": 1000 * (ttft if ttft is not None else total), "total_ms": 1000 * total}


def pct(values, p):
    v = sorted(values)
    return v[min(len(v) - 1, max(0, math.ceil(p / 100 * len(v)) - 1))] if v else float("nan")


def drive(port, rate, seconds, seed, arm_of):
    """Open-loop arrivals for `seconds`; arm_of(i, t) -> (arm, model). Results by arm."""
    rng = random.Random(seed)
    results = {}
    lock = threading.Lock()

    def task(arm, model, i):
        r = one(port, model, f"Question {i % 50}: name a river.")
        with lock:
            results.setdefault(arm, []).append(r)

    t0 = time.monotonic()
    t = t0
    i = 0
    with ThreadPoolExecutor(max_workers=256) as pool:
        while True:
            t += rng.expovariate(rate)
            if t >= t0 + seconds:
                break
            delay = t - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            arm, model = arm_of(i, t - t0)
            pool.submit(task, arm, model, i)
            i += 1
    return results


def summary(rows):
    ok = [r for r in rows if r["ok"]]
    return {"requests": len(rows), "failed": len(rows) - len(ok),
            "ttft_p50": pct([r["ttft_ms"] for r in ok], 50), "ttft_p99": pct([r["ttft_ms"] for r in ok], 99),
            "total_p50": pct([r["total_ms"] for r in ok], 50), "total_p99": pct([r["total_ms"] for r in ok], 99)}


def print_arms(results, a, b):
    """The arms' table, and arm `a`'s latencies over arm `b`'s."""
    rows = {arm: summary(r) for arm, r in sorted(results.items())}
    print("| arm | requests | failed | TTFT P50 ms | TTFT P99 ms | total P50 ms | total P99 ms |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for arm, s in rows.items():
        print(f"| {arm} | {s['requests']} | {s['failed']} | {s['ttft_p50']:.1f} | {s['ttft_p99']:.1f} | "
              f"{s['total_p50']:.1f} | {s['total_p99']:.1f} |")
    if a in rows and b in rows:
        print(f"{a} / {b}: TTFT P50 {rows[a]['ttft_p50'] / rows[b]['ttft_p50']:.3f}, "
              f"P99 {rows[a]['ttft_p99'] / rows[b]['ttft_p99']:.3f}; "
              f"total P50 {rows[a]['total_p50'] / rows[b]['total_p50']:.3f}, "
              f"P99 {rows[a]['total_p99'] / rows[b]['total_p99']:.3f}")
