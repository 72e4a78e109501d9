#!/usr/bin/env python3
"""A RAG-like workload with repeated and reworded questions, against a real
gateway and arbiter-sim, with the result cache on and off (issue 44,
docs/benchmarks.md "Result cache").

Each request asks one question about one document: a system line, the
document's text (~1.2 KB: what retrieval put in the prompt) and the
question, temperature 0, 64 tokens, streamed. Questions are drawn by
popularity (Zipf, s = 1.1, over 400); a question asked again comes as
first written (70%), written differently (20%: case, punctuation, spacing,
a polite prefix, a typo in a long word) or reworded with other words (10%:
a near-duplicate match must not take these). Open-loop Poisson arrivals,
the same seed for both runs.

Reported per run: the answers' sources (x-arbiter-cache: hit, near,
coalesced, miss), the engine's work (arbiter-sim's prompt and generation
token counters), and time to first token, P50 and P99, over all requests.

usage: python3 bench/cache_rag.py [--build build] [--rate 20] [--seconds 60] [--seed 1]
"""
import argparse
import http.client
import random
import re
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from bench_procs import pct, start_gateway, start_sim, stop_all, stream_chat

WORDS = ("system network storage request latency budget policy tenant engine queue cache token stream "
         "deploy rollback replica region quota metric alert backup restore shard index vector prompt "
         "model batch window limit error retry timeout schema table column report invoice customer "
         "order payment refund contract warranty device battery screen update release feature").split()
TOPICS = ["the retry budget", "data retention", "the refund window", "the upgrade path", "error budgets",
          "the backup schedule", "access control", "the warranty terms", "rate limits", "the release train"]
TEMPLATES = ["What does the document say about {t}?", "Summarize what the document states on {t}.",
             "Which section of the document covers {t}?", "List the rules the document gives for {t}."]
REWORDED = ["According to this text, how is {t} handled?", "Explain {t} as this document describes it.",
            "Give me the gist of {t} per the document.", "In this document, where is {t} discussed?"]


def document(i):
    rng = random.Random(1000 + i)
    sentences = []
    while sum(len(s) for s in sentences) < 1200:
        sentences.append(" ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 16))).capitalize() + ".")
    return f"Document {i}. " + " ".join(sentences)


def surface(q, rng):
    kind = rng.randrange(5)
    if kind == 0:
        return q.lower()
    if kind == 1:
        return q.rstrip("?.") + rng.choice(["", " ?", "!!"])
    if kind == 2:
        return "  " + q.replace(" ", "  ", 2)
    if kind == 3:
        return "Please, " + q[0].lower() + q[1:]
    words = q.split(" ")
    long = [i for i, w in enumerate(words) if len(w.strip("?.")) >= 8 and w.strip("?.").isalpha()]
    if not long:
        return q.lower()
    i = rng.choice(long)
    w = words[i]
    words[i] = w[:2] + w[3] + w[2] + w[4:]  # two letters swapped
    return " ".join(words)


class Workload:
    def __init__(self, seed, questions=400, docs=200):
        rng = random.Random(seed)
        self.questions = []
        for q in range(questions):
            topic = rng.choice(TOPICS)
            template = rng.randrange(len(TEMPLATES))
            self.questions.append((rng.randrange(docs), template, topic))
        weights = [1 / (k + 1) ** 1.1 for k in range(questions)]
        total = sum(weights)
        self.cdf = []
        acc = 0
        for w in weights:
            acc += w / total
            self.cdf.append(acc)
        self.asked = set()

    def pick(self, rng):
        u = rng.random()
        lo, hi = 0, len(self.cdf) - 1
        while lo < hi:
            mid = (lo + hi) // 2
            if self.cdf[mid] < u:
                lo = mid + 1
            else:
                hi = mid
        doc, template, topic = self.questions[lo]
        question = TEMPLATES[template].format(t=topic)
        if lo in self.asked:
            r = rng.random()
            if r < 0.2:
                question = surface(question, rng)
            elif r < 0.3:
                question = REWORDED[template].format(t=topic)
        self.asked.add(lo)
        return {"model": "m1", "temperature": 0, "max_tokens": 64, "stream": True,
                "messages": [{"role": "system", "content": "Answer from the context only."},
                             {"role": "user", "content": f"Context: {document(doc)}\n\nQuestion: {question}"}]}


def sim_tokens(port):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    c.request("GET", "/metrics")
    text = c.getresponse().read().decode()
    out = {}
    for name in ("vllm:prompt_tokens_total", "vllm:generation_tokens_total", "vllm:request_success_total"):
        out[name] = sum(float(m) for m in re.findall(rf"^{re.escape(name)}(?:{{[^}}]*}})? (\S+)$", text, re.M))
    return out


def one(port, body):
    start = time.monotonic()
    r, _, ttft = stream_chat(port, body, start)
    source = r.getheader("x-arbiter-cache") or "none"
    return {"status": r.status, "source": source, "ttft_ms": 1000 * (ttft if ttft is not None else time.monotonic() - start)}


def run(args, cache_on):
    tmp = tempfile.mkdtemp(prefix="arbiter-rag.")
    procs = []
    try:
        sim, sim_port = start_sim(args.build, tmp)
        procs.append(sim)
        gateway, port, _ = start_gateway(
            args.build, tmp,
            "listener: {address: 127.0.0.1, port: 0, threads: 1}\nadmin: {port: 0}\nauth: {enabled: false}\n"
            "log: {access_log: false}\n"
            f"cache: {{enabled: {'true' if cache_on else 'false'}}}\n"
            f"models:\n  - name: m1\n    backends: [{{url: 'http://127.0.0.1:{sim_port}', max_concurrency: 256}}]\n")
        procs.append(gateway)
        before = sim_tokens(sim_port)
        rng = random.Random(args.seed)
        workload = Workload(args.seed)
        results = []
        lock = threading.Lock()

        def task(body):
            r = one(port, body)
            with lock:
                results.append(r)

        t = time.monotonic()
        end = t + args.seconds
        with ThreadPoolExecutor(max_workers=256) as pool:
            while True:
                t += rng.expovariate(args.rate)
                if t >= end:
                    break
                body = workload.pick(rng)
                delay = t - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                pool.submit(task, body)
        after = sim_tokens(sim_port)
        return results, {k: after[k] - before[k] for k in after}
    finally:
        stop_all(procs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--rate", type=float, default=20)
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rows = []
    for cache_on in (False, True):
        results, engine = run(args, cache_on)
        ok = [r for r in results if r["status"] == 200]
        sources = {}
        for r in ok:
            sources[r["source"]] = sources.get(r["source"], 0) + 1
        rows.append((cache_on, len(results), len(ok), sources, engine, [r["ttft_ms"] for r in ok],
                     [r["ttft_ms"] for r in ok if r["source"] in ("hit", "near")]))
    print("| cache | requests (200) | hit | near | coalesced | miss | engine prompt tokens | engine output tokens "
          "| TTFT P50 ms | TTFT P99 ms |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for cache_on, n, n_ok, sources, engine, ttft, _ in rows:
        share = lambda k: f"{100 * sources.get(k, 0) / max(1, n_ok):.1f}%"
        print(f"| {'on' if cache_on else 'off'} | {n} ({n_ok}) | {share('hit')} | {share('near')} | {share('coalesced')} "
              f"| {share('miss') if cache_on else '-'} | {engine['vllm:prompt_tokens_total']:.0f} "
              f"| {engine['vllm:generation_tokens_total']:.0f} | {pct(ttft, 50):.1f} | {pct(ttft, 99):.1f} |")
    off, on = rows[0], rows[1]
    saved = 1 - on[4]["vllm:generation_tokens_total"] / max(1, off[4]["vllm:generation_tokens_total"])
    print(f"\nengine output tokens saved: {100 * saved:.1f}%; TTFT of answers from the cache: "
          f"P50 {pct(on[6], 50):.1f} ms, P99 {pct(on[6], 99):.1f} ms")


if __name__ == "__main__":
    main()
