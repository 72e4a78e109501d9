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

--semantic adds a third run: the cache with its semantic mode, a second
arbiter-sim as the embeddings engine (its vectors: a hashed bag of words,
256 dimensions, threshold 0.9). Its near hits are split by how they were
found (x-arbiter-cache-match), and those answering another question than
the one asked (a semantic hit on the same document: the shared context
dominates the embedding) are counted as wrong: the fresh answer it replays
was written for another question.

--context-apart puts the document in the system message and the question
alone in the user message after it (the semantic mode then embeds the
question and requires the context to be the same).

usage: python3 bench/cache_rag.py [--build build] [--rate 20] [--seconds 60] [--seed 1] [--semantic]
                                  [--context-apart]
"""
import argparse
import http.client
import json
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
    def __init__(self, seed, questions=400, docs=200, context_apart=False):
        rng = random.Random(seed)
        self.context_apart = context_apart
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
        if self.context_apart:  # the retrieved context in the system message, the question alone after it
            messages = [{"role": "system", "content": f"Answer from this context only: {document(doc)}"},
                        {"role": "user", "content": question}]
        else:
            messages = [{"role": "system", "content": "Answer from the context only."},
                        {"role": "user", "content": f"Context: {document(doc)}\n\nQuestion: {question}"}]
        return {"model": "m1", "temperature": 0, "max_tokens": 64, "stream": True, "messages": messages}, lo


def sim_tokens(port):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    c.request("GET", "/metrics")
    text = c.getresponse().read().decode()
    out = {}
    for name in ("vllm:prompt_tokens_total", "vllm:generation_tokens_total", "vllm:request_success_total"):
        out[name] = sum(float(m) for m in re.findall(rf"^{re.escape(name)}(?:{{[^}}]*}})? (\S+)$", text, re.M))
    return out


def content(stream):
    """A streamed answer's text: its events' content deltas, joined."""
    text = []
    for line in stream.decode(errors="replace").splitlines():
        if not line.startswith("data: {"):
            continue
        for choice in json.loads(line[6:]).get("choices", []):
            text.append(choice.get("delta", {}).get("content") or "")
    return "".join(text)


def one(port, body):
    start = time.monotonic()
    r, stream, ttft = stream_chat(port, body, start)
    text = content(stream)
    source = r.getheader("x-arbiter-cache") or "none"
    if source == "near":
        source = "semantic" if r.getheader("x-arbiter-cache-match") == "semantic" else "near"
    return {"status": r.status, "source": source, "text": text,
            "ttft_ms": 1000 * (ttft if ttft is not None else time.monotonic() - start)}


def run(args, mode):
    """mode: off, on, or semantic (on, with the semantic mode)."""
    tmp = tempfile.mkdtemp(prefix="arbiter-rag.")
    procs = []
    try:
        sim, sim_port = start_sim(args.build, tmp)
        procs.append(sim)
        cache = f"cache: {{enabled: {'false' if mode == 'off' else 'true'}}}\n"
        models = f"models:\n  - name: m1\n    backends: [{{url: 'http://127.0.0.1:{sim_port}', max_concurrency: 256}}]\n"
        if mode == "semantic":
            embedder, embedder_port = start_sim(args.build, tmp, name="emb", model="emb")
            procs.append(embedder)
            cache = "cache: {semantic_model: emb, semantic_dimensions: 256, semantic_threshold: 0.9}\n"
            models += f"  - name: emb\n    backends: [{{url: 'http://127.0.0.1:{embedder_port}'}}]\n"
        gateway, port, _ = start_gateway(
            args.build, tmp,
            "listener: {address: 127.0.0.1, port: 0, threads: 1}\nadmin: {port: 0}\nauth: {enabled: false}\n"
            "log: {access_log: false}\n" + cache + models)
        procs.append(gateway)
        before = sim_tokens(sim_port)
        rng = random.Random(args.seed)
        workload = Workload(args.seed, context_apart=args.context_apart)
        results = []
        lock = threading.Lock()

        def task(body, question):
            r = one(port, body)
            r["question"] = question
            with lock:
                results.append(r)

        t = time.monotonic()
        end = t + args.seconds
        with ThreadPoolExecutor(max_workers=256) as pool:
            while True:
                t += rng.expovariate(args.rate)
                if t >= end:
                    break
                body, question = workload.pick(rng)
                delay = t - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                pool.submit(task, body, question)
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
    ap.add_argument("--semantic", action="store_true")
    ap.add_argument("--context-apart", action="store_true")
    args = ap.parse_args()
    rows = []
    modes = ("off", "on", "semantic") if args.semantic else ("off", "on")
    for mode in modes:
        results, engine = run(args, mode)
        ok = [r for r in results if r["status"] == 200]
        sources = {}
        for r in ok:
            sources[r["source"]] = sources.get(r["source"], 0) + 1
        # Which question each fresh answer (a miss's) was written for: a
        # semantic hit replays one of them, and one written for another
        # question is a wrong answer.
        written_for = {}
        for r in ok:
            if r["source"] == "miss":
                written_for.setdefault(r["text"], r["question"])
        wrong = sum(1 for r in ok if r["source"] == "semantic" and written_for.get(r["text"], r["question"]) != r["question"])
        rows.append((mode, len(results), len(ok), sources, engine, [r["ttft_ms"] for r in ok],
                     [r["ttft_ms"] for r in ok if r["source"] in ("hit", "near", "semantic")],
                     [r["ttft_ms"] for r in ok if r["source"] == "miss"], wrong))
    print("| cache | requests (200) | hit | near | semantic (wrong) | coalesced | miss | engine prompt tokens "
          "| engine output tokens | TTFT P50 ms | TTFT P99 ms | misses' TTFT P50 ms |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for mode, n, n_ok, sources, engine, ttft, _, missed, wrong in rows:
        share = lambda k: f"{100 * sources.get(k, 0) / max(1, n_ok):.1f}%"
        print(f"| {mode} | {n} ({n_ok}) | {share('hit')} | {share('near')} | {share('semantic')} ({wrong}) "
              f"| {share('coalesced')} | {share('miss') if mode != 'off' else '-'} "
              f"| {engine['vllm:prompt_tokens_total']:.0f} | {engine['vllm:generation_tokens_total']:.0f} "
              f"| {pct(ttft, 50):.1f} | {pct(ttft, 99):.1f} | {pct(missed, 50) if missed else float('nan'):.1f} |")
    off, on = rows[0], rows[1]
    saved = 1 - on[4]["vllm:generation_tokens_total"] / max(1, off[4]["vllm:generation_tokens_total"])
    print(f"\nengine output tokens saved: {100 * saved:.1f}%; TTFT of answers from the cache: "
          f"P50 {pct(on[6], 50):.1f} ms, P99 {pct(on[6], 99):.1f} ms")


if __name__ == "__main__":
    main()
