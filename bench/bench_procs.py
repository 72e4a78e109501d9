"""Process and request helpers the live bench scripts share (cache_rag.py, rollout_ab.py)."""
import http.client
import json
import os
import re
import sys
import time


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
