"""Process helpers the live bench scripts share (cache_rag.py, rollout_ab.py)."""
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
