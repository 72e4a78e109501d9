#!/usr/bin/env python3
"""The gateway's memory per idle keep-alive connection and per open stream,
and its CPU time per streamed event.

    python3 bench/connection_memory.py build/arbiter [--connections N] [--event-rate R]

Starts the gateway on a free loopback port in front of a fake engine (in
this process) that answers every streaming request with its header and one
SSE event, then holds the stream open. Measures the gateway's RSS
(/proc/PID/status VmRSS) after a warm-up, then with N idle keep-alive
connections (each has made one GET /healthz), then with N open streams (each
has received its first event), and prints the differences per connection.
Then the engine sends each open stream R events a second for 5 s: the
gateway's CPU time (/proc/PID/stat utime + stime) over the events its
clients received gives its CPU per relayed event.
Everything is on 127.0.0.1 and stops by itself. docs/deployment.md, "Sizing".
"""
import argparse
import asyncio
import os
import resource
import subprocess
import sys
import tempfile
import time

CONFIG = """listener: {{address: 127.0.0.1, port: 0, threads: 1}}
admin: {{port: 0}}
timeouts: {{keepalive_idle_ms: 600000, stream_idle_ms: 600000, upstream_first_byte_ms: 600000}}
log: {{access_log: false}}
models:
  - name: m
    backends:
      - {{name: fake, url: "http://127.0.0.1:{port}", max_concurrency: 100000}}
classes:
  - {{name: chat, max_queue: 100000}}
"""
EVENT = b'data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"x"}}]}\n\n'
CHUNK = b"%x\r\n" % len(EVENT) + EVENT + b"\r\n"
STREAMS = set()  # the engine's open streams, for the ticker
RECEIVED = [0]   # events the clients received
BODY = b'{"model":"m","stream":true,"max_tokens":64,"messages":[{"role":"user","content":"hello"}]}'


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


async def fake_engine(reader, writer):
    """Answers GETs (the gateway's /metrics scrapes, health probes) with an
    empty 404, and a POST with an open SSE stream: header, one event, then
    silence until the gateway closes it."""
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            await reader.readexactly(length)
            if not head.startswith(b"POST "):
                writer.write(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n")
                await writer.drain()
                continue
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
                         + CHUNK)
            await writer.drain()
            STREAMS.add(writer)
            try:
                await reader.read()  # until the gateway closes it
            finally:
                STREAMS.discard(writer)
            return
    except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
        pass
    finally:
        writer.close()


async def open_idle(port):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n")
    await writer.drain()
    await reader.readuntil(b'{"status":"ok"}')
    return writer


async def open_stream(port):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
                 b"content-length: %d\r\n\r\n" % len(BODY) + BODY)
    await writer.drain()
    await reader.readuntil(b"data: ")
    return reader, writer


async def count_events(reader):
    try:
        while data := await reader.read(65536):
            RECEIVED[0] += data.count(b"data: ")
    except (ConnectionError, asyncio.CancelledError):
        pass


async def ticker(rate):
    """Sends every open stream one event, `rate` times a second."""
    while True:
        for w in list(STREAMS):
            if not w.is_closing():
                w.write(CHUNK)
        await asyncio.sleep(1.0 / rate)


def cpu_s(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def open_many(fn, port, n, batch=200):
    out = []
    for i in range(0, n, batch):
        out += await asyncio.gather(*(fn(port) for _ in range(min(batch, n - i))))
    return out


async def settle(pid):
    await asyncio.sleep(1.0)
    return rss_kib(pid)


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("arbiter")
    ap.add_argument("--connections", type=int, default=2000)
    ap.add_argument("--event-rate", type=float, default=10, help="events a second on each stream")
    args = ap.parse_args()
    n = args.connections
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    if hard < 2 * n + 100:
        sys.exit(f"fd limit {hard} is too low for {n} connections (needs about {2 * n + 100})")

    engine = await asyncio.start_server(fake_engine, "127.0.0.1", 0, backlog=4096)
    engine_port = engine.sockets[0].getsockname()[1]
    with tempfile.TemporaryDirectory() as tmp:
        cfg = os.path.join(tmp, "arbiter.yaml")
        with open(cfg, "w") as f:
            f.write(CONFIG.format(port=engine_port))
        port_file = os.path.join(tmp, "port")
        gw = subprocess.Popen([args.arbiter, "--config", cfg, "--port-file", port_file],
                              stderr=subprocess.DEVNULL)
        try:
            for _ in range(100):
                if os.path.exists(port_file):
                    break
                await asyncio.sleep(0.05)
            with open(port_file) as f:
                port = int(f.read())
            # Warm-up: threads, pools and allocator caches in place.
            for _, w in await open_many(open_stream, port, 100):
                w.close()
            for w in await open_many(open_idle, port, 100):
                w.close()
            base = await settle(gw.pid)
            idle = await open_many(open_idle, port, n)
            with_idle = await settle(gw.pid)
            for w in idle:
                w.close()
            await asyncio.sleep(1.0)
            base2 = await settle(gw.pid)
            streams = await open_many(open_stream, port, n)
            with_streams = await settle(gw.pid)
            # CPU of the open streams while silent (the deadline sweeper walks them).
            cpu_q0, tq0 = cpu_s(gw.pid), time.monotonic()
            await asyncio.sleep(3.0)
            cpu_q1, tq1 = cpu_s(gw.pid), time.monotonic()
            counters = [asyncio.create_task(count_events(r)) for r, _ in streams]
            tick = asyncio.create_task(ticker(args.event_rate))
            await asyncio.sleep(1.0)
            cpu0, events0, t0 = cpu_s(gw.pid), RECEIVED[0], time.monotonic()
            await asyncio.sleep(5.0)
            cpu1, events1, t1 = cpu_s(gw.pid), RECEIVED[0], time.monotonic()
            tick.cancel()
            # Handlers the loop cancels at exit may not have started their
            # try yet: their CancelledError is expected, not worth a trace.
            asyncio.get_running_loop().set_exception_handler(lambda loop, context: None)
            for _, w in streams:
                w.close()
            for c in counters:
                c.cancel()
        finally:
            gw.terminate()
            try:
                gw.wait(timeout=10)
            except subprocess.TimeoutExpired:
                gw.kill()
    engine.close()
    print(f"gateway RSS at rest after warm-up: {base / 1024:.1f} MiB")
    print(f"{n} idle keep-alive connections: +{(with_idle - base) / 1024:.1f} MiB, "
          f"{(with_idle - base) * 1024 / n / 1024:.1f} KiB each")
    print(f"{n} open streams (client and engine sockets): +{(with_streams - base2) / 1024:.1f} MiB, "
          f"{(with_streams - base2) * 1024 / n / 1024:.1f} KiB each "
          f"(RSS before them {base2 / 1024:.1f} MiB)")
    events = events1 - events0
    silent = (cpu_q1 - cpu_q0) / (tq1 - tq0)
    busy = (cpu1 - cpu0) / (t1 - t0)
    print(f"{n} open streams, silent: gateway CPU {silent:.3f} cores")
    print(f"{n} streams at {args.event_rate:g} events/s each: {events / (t1 - t0):.0f} events/s relayed, "
          f"gateway CPU {busy:.3f} cores, {(busy - silent) * (t1 - t0) * 1e6 / max(events, 1):.1f} us "
          f"per event over the silent streams' CPU")


if __name__ == "__main__":
    t0 = time.time()
    asyncio.run(main())
    print(f"({time.time() - t0:.0f} s)")
