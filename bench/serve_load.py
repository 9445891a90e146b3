#!/usr/bin/env python3
"""Load on an OpenAI-compatible chat server: kvrun serve, or llama.cpp's server given the same passages as text.

Each of C clients sends streamed chat completions back to back (closed loop) for --seconds, cycling through the
questions of a data set in the format of ../shared/data (question, contexts); --rate instead sends requests at
that many per second whatever the answers (open loop: Poisson arrivals, at most C in flight). Per level it
reports TTFT p50 and p99 (request sent to first content token), latency p50, generated tokens/s, answers/s and
errors. Python's standard library only, so any python3 runs it.

  bench/serve_load.py --url http://127.0.0.1:8080 --kind kvfuse --dataset DATA.jsonl --clients 1,4,16
  bench/serve_load.py --url http://127.0.0.1:8081 --kind text --dataset DATA.jsonl --clients 1,4,16

--kind kvfuse sends each question's passages as `kvfuse.documents` (the store must hold them: build it from the
data set, e.g. `kvrun eval --build-store`), with --method and --recompute; --kind text puts the same passages in
the user message as "Title: ...\\ntext" blocks, for a server that prefills them (llama.cpp). Results go to stdout
as a Markdown table, and with --out to a JSON file.

--requests-per-client K ends a closed-loop level once each client has had K answers (a fixed count instead of
--seconds). A soak: --malformed 0.05 makes that share of requests bad on purpose (broken JSON, wrong types, unknown
fields, a ratio outside [0, 1], an unknown chunk id, a body over the limit); each must get a 4xx in OpenAI's error
shape and is counted apart from the valid requests, whose failures stay errors. --server-pid PID samples the
server's resident memory every 5 s, with a kvfuse server also its chunk KV cache's bytes (/metrics), and reports it
at the end of the warm-up and at the end. The warm-up lasts at least --warmup seconds, and for kvfuse until the
chunk cache has settled (grown less than 1% over the last --settle seconds): a filling cache is memory the server
was asked to use, not growth.
"""
import argparse
import gzip
import http.client
import json
import os
import random
import statistics
import sys
import threading
import time
import urllib.parse
import urllib.request


def load_questions(path, limit):
    opener = gzip.open if path.endswith(".gz") else open
    out = []
    with opener(path, "rt", encoding="utf-8") as f:
        for line in f:
            if line.strip():
                q = json.loads(line)
                out.append({"question": q["question"], "contexts": q.get("contexts", [])})
            if len(out) >= limit:
                break
    if not out:
        sys.exit(f"serve_load: {path}: no questions")
    return out


def request_body(q, args):
    body = {"messages": [{"role": "user", "content": q["question"]}], "max_tokens": args.max_tokens,
            "temperature": 0, "stream": True, "stream_options": {"include_usage": True}}
    if args.kind == "kvfuse":
        body["kvfuse"] = {"method": args.method, "recompute": args.recompute,
                          "documents": [{"title": c.get("title", ""), "text": c["text"]} for c in q["contexts"]]}
    else:
        passages = "\n\n".join(f"Title: {c.get('title', '')}\n{c['text']}" for c in q["contexts"])
        body["messages"][0]["content"] = f"{passages}\n\nAnswer the question from the passages above.\n" \
                                         f"Question: {q['question']}"
    return json.dumps(body).encode()


MALFORMED = [  # (what, body): each must be refused with a 4xx in OpenAI's error shape
    ("broken JSON", b'{"messages": [{"role": "user", "content": "x"}'),
    ("messages not a list", json.dumps({"messages": "hello"}).encode()),
    ("max_tokens a string", json.dumps({"messages": [{"role": "user", "content": "x"}], "max_tokens": "9"}).encode()),
    ("unknown kvfuse field", json.dumps({"messages": [{"role": "user", "content": "x"}],
                                         "kvfuse": {"recompute_ratio": 0.1}}).encode()),
    ("recompute 1.5", json.dumps({"messages": [{"role": "user", "content": "x"}],
                                  "kvfuse": {"recompute": 1.5}}).encode()),
    ("unknown chunk id", json.dumps({"messages": [{"role": "user", "content": "x"}],
                                     "kvfuse": {"chunk_ids": ["ffffffffffffffff"]}}).encode()),
    ("temperature 0.7", json.dumps({"messages": [{"role": "user", "content": "x"}], "temperature": 0.7}).encode()),
    ("body over the limit", json.dumps({"messages": [{"role": "user", "content": "x" * (2 << 20)}]}).encode()),
]


def malformed_request(url, body, timeout):
    """Sends a bad request; raises unless the answer is a 4xx with an OpenAI error object."""
    u = urllib.parse.urlparse(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=timeout)
    try:
        conn.request("POST", "/v1/chat/completions", body, {"Content-Type": "application/json"})
        resp = conn.getresponse()
        payload = resp.read()
    except (ConnectionError, http.client.HTTPException):
        if len(body) > (1 << 20):  # a server may close on an oversized body before reading it all
            return
        raise
    finally:
        conn.close()
    if not 400 <= resp.status < 500:
        raise RuntimeError(f"HTTP {resp.status} for a bad request")
    if "message" not in json.loads(payload).get("error", {}):
        raise RuntimeError(f"HTTP {resp.status} without an error message: {payload[:200]!r}")


def resident_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"/proc/{pid}/status: no VmRSS")


def chunk_cache_bytes(url):
    """kvfuse_chunk_cache_bytes from a kvfuse server's /metrics."""
    with urllib.request.urlopen(url + "/metrics", timeout=30) as resp:
        for line in resp.read().decode().splitlines():
            if line.startswith("kvfuse_chunk_cache_bytes "):
                return float(line.split()[1])
    raise RuntimeError(f"{url}/metrics: no kvfuse_chunk_cache_bytes")


def warmup_end(samples, warmup, settle):
    """The index of the first sample at least `warmup` seconds in whose chunk cache (None: not sampled) grew less
    than 1% over the `settle` seconds before it; None if the cache never settled."""
    for i, (t, _, cache) in enumerate(samples):
        if t < warmup:
            continue
        if cache is None:
            return i
        before = [c for u, _, c in samples[:i] if u <= t - settle]
        if before and cache <= 1.01 * before[-1]:
            return i
    return None


def one_request(url, body, timeout):
    """Sends one streamed completion; returns (ttft_s, latency_s, tokens) or raises. Tokens: the usage the stream
    ends with, else the count of content deltas."""
    u = urllib.parse.urlparse(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=timeout)
    t0 = time.perf_counter()
    conn.request("POST", "/v1/chat/completions", body, {"Content-Type": "application/json"})
    resp = conn.getresponse()
    if resp.status != 200:
        raise RuntimeError(f"HTTP {resp.status}: {resp.read()[:200]!r}")
    ttft, chunks, usage_tokens, done = None, 0, None, False
    for raw in resp:
        line = raw.decode("utf-8", "replace").strip()
        if not line.startswith("data: "):
            continue
        data = line[6:]
        if data == "[DONE]":
            done = True
            break
        event = json.loads(data)
        if "error" in event:
            raise RuntimeError(event["error"].get("message", "error event"))
        if event.get("usage"):
            usage_tokens = event["usage"].get("completion_tokens")
        for choice in event.get("choices", []):
            if choice.get("delta", {}).get("content"):
                chunks += 1
                if ttft is None:
                    ttft = time.perf_counter() - t0
    conn.close()
    if not done:
        raise RuntimeError("the stream ended without [DONE]")
    latency = time.perf_counter() - t0
    return (ttft if ttft is not None else latency), latency, usage_tokens if usage_tokens is not None else chunks


def run_level(args, questions, clients):
    results, errors, lock = [], [], threading.Lock()
    malformed = {"sent": 0, "refused": 0, "wrong": []}
    stop_at = time.perf_counter() + args.seconds
    counter = iter(range(1 << 62))
    in_flight = threading.Semaphore(clients)
    bad_rng = random.Random(7)

    def send(i):
        with lock:
            bad = args.malformed > 0 and bad_rng.random() < args.malformed
        if bad:
            what, body = MALFORMED[i % len(MALFORMED)]
            try:
                malformed_request(args.url, body, args.timeout)
                with lock:
                    malformed["sent"] += 1
                    malformed["refused"] += 1
            except Exception as e:  # noqa: BLE001
                with lock:
                    malformed["sent"] += 1
                    malformed["wrong"].append(f"{what}: {str(e)[:160]}")
            return
        try:
            ttft, latency, chunks = one_request(args.url, request_body(questions[i % len(questions)], args),
                                                args.timeout)
            with lock:
                results.append((ttft, latency, chunks))
        except Exception as e:  # noqa: BLE001 - every failure is counted and shown
            with lock:
                errors.append(str(e)[:200])

    def closed_loop():
        answered = 0
        while time.perf_counter() < stop_at and (not args.requests_per_client or answered < args.requests_per_client):
            with lock:
                i = next(counter)
            send(i)
            answered += 1

    memory, sampling = [], threading.Event()  # (seconds, resident MiB, chunk cache bytes or None)

    def sample(t):
        cache = chunk_cache_bytes(args.url) if args.kind == "kvfuse" else None
        memory.append((t, resident_mib(args.server_pid), cache))

    def sample_memory():
        start = time.perf_counter()
        while not sampling.wait(5):
            sample(time.perf_counter() - start)

    sampler = threading.Thread(target=sample_memory)
    if args.server_pid:
        sample(0.0)
        sampler.start()

    threads = []
    t0 = time.perf_counter()
    if args.rate:
        rng = random.Random(20261128)
        while time.perf_counter() < stop_at:
            time.sleep(rng.expovariate(args.rate))
            if not in_flight.acquire(blocking=False):
                with lock:
                    errors.append("dropped: all clients busy")
                continue
            i = next(counter)
            t = threading.Thread(target=lambda i=i: (send(i), in_flight.release()))
            t.start()
            threads.append(t)
    else:
        threads = [threading.Thread(target=closed_loop) for _ in range(clients)]
        for t in threads:
            t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    if args.server_pid:
        sampling.set()
        sampler.join()
        sample(wall)
    row = {"clients": clients, "requests": len(results) + len(errors), "errors": len(errors), "seconds": wall}
    if args.malformed:
        row.update({"malformed": malformed["sent"], "malformed_refused": malformed["refused"],
                    "malformed_wrong": malformed["wrong"][:5]})
    if memory:
        end = warmup_end(memory, args.warmup, args.settle)
        row.update({"warmup_end_s": None if end is None else memory[end][0],
                    "rss_after_warmup_mib": None if end is None else memory[end][1], "rss_end_mib": memory[-1][1],
                    "rss_peak_mib": max(m for _, m, _ in memory), "rss_samples": memory})
    if results:
        ttfts = sorted(r[0] for r in results)
        row.update({
            "ttft_p50_ms": 1000 * statistics.median(ttfts),
            "ttft_p99_ms": 1000 * ttfts[min(len(ttfts) - 1, int(0.99 * len(ttfts)))],
            "latency_p50_ms": 1000 * statistics.median(r[1] for r in results),
            "tokens_per_s": sum(r[2] for r in results) / wall,
            "answers_per_s": len(results) / wall,
        })
    if errors:
        row["first_error"] = errors[0]
    return row


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--url", required=True, help="the server, e.g. http://127.0.0.1:8080")
    p.add_argument("--kind", choices=["kvfuse", "text"], required=True,
                   help="kvfuse: passages as kvfuse.documents; text: passages in the prompt")
    p.add_argument("--dataset", required=True, help="JSONL(.gz) questions with contexts")
    p.add_argument("--questions", type=int, default=50, help="questions cycled through")
    p.add_argument("--clients", default="1,4,16", help="comma-separated concurrency levels")
    p.add_argument("--seconds", type=float, default=60, help="per level")
    p.add_argument("--requests-per-client", type=int, default=0,
                   help="closed loop: end a level after this many requests per client (0: run --seconds)")
    p.add_argument("--rate", type=float, default=0, help="open loop: requests per second (0: closed loop)")
    p.add_argument("--malformed", type=float, default=0, help="share of requests made bad on purpose (soak)")
    p.add_argument("--server-pid", type=int, default=0, help="sample this process's resident memory")
    p.add_argument("--warmup", type=float, default=60, help="with --server-pid: seconds before the baseline at least")
    p.add_argument("--settle", type=float, default=60,
                   help="with --server-pid on kvfuse: the baseline waits for the chunk cache to stop growing for this "
                        "long")
    p.add_argument("--max-tokens", type=int, default=16)
    p.add_argument("--method", default="fusion")
    p.add_argument("--recompute", type=float, default=0.15)
    p.add_argument("--timeout", type=float, default=600)
    p.add_argument("--out", help="write the rows as JSON here too")
    args = p.parse_args()
    questions = load_questions(args.dataset, args.questions)
    rows = [run_level(args, questions, int(c)) for c in args.clients.split(",")]
    print(f"| clients | requests | errors | TTFT p50 ms | TTFT p99 ms | latency p50 ms | tokens/s | answers/s |")
    print("|--:|--:|--:|--:|--:|--:|--:|--:|")
    for r in rows:
        print(f"| {r['clients']} | {r['requests']} | {r['errors']} | {r.get('ttft_p50_ms', 0):.0f} | "
              f"{r.get('ttft_p99_ms', 0):.0f} | {r.get('latency_p50_ms', 0):.0f} | {r.get('tokens_per_s', 0):.1f} | "
              f"{r.get('answers_per_s', 0):.2f} |")
    for r in rows:
        if "malformed" in r:
            print(f"\n{r['clients']} clients: {r['malformed']} malformed requests, {r['malformed_refused']} refused with "
                  f"a 4xx and an error message; wrong: {r['malformed_wrong'] or 'none'}")
        if "rss_end_mib" in r and r["warmup_end_s"] is None:
            print(f"{r['clients']} clients: the chunk cache never settled; server resident memory "
                  f"{r['rss_end_mib']:.0f} MiB at the end, peak {r['rss_peak_mib']:.0f} MiB")
        elif "rss_end_mib" in r:
            growth = 100 * (r["rss_end_mib"] / r["rss_after_warmup_mib"] - 1)
            print(f"{r['clients']} clients: server resident memory {r['rss_after_warmup_mib']:.0f} MiB at the end of "
                  f"the warm-up ({r['warmup_end_s']:.0f} s), {r['rss_end_mib']:.0f} MiB at the end ({growth:+.1f}%), "
                  f"peak {r['rss_peak_mib']:.0f} MiB")
        if "first_error" in r:
            print(f"{r['clients']} clients: first error: {r['first_error']}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"args": vars(args), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
