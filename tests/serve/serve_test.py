#!/usr/bin/env python3
"""`kvrun serve` answers the official OpenAI Python client as an OpenAI-compatible server (Serve.OpenAiClients).

Builds a small SmolLM2 store with `kvprep run` (independent and similarity KV), starts
`kvrun serve --store S --port 0 --threads 2 --max-batch 8 --max-body-bytes 65536 --drain-seconds 30`, waits for its
`listening on http://127.0.0.1:PORT` line on stdout, then checks:
  a. GET /health and GET /v1/models;
  b. chat completions for every method equal `kvrun ask --json`'s answer and chunk ids, with usage and a
     `kvfuse` object (chunk_ids, timings_ms);
  c. streaming: the same text through the client, and a raw SSE stream that ends with `data: [DONE]`;
  d. 8 concurrent clients get the answers they get one at a time;
  e. bad requests: status and an OpenAI error object naming the field and the value; a body over
     --max-body-bytes (413); a second server with --api-key-file (401 without or with a wrong key, 200 with it);
  f. GET /metrics is Prometheus text with kvfuse_requests_total, the kvfuse_ttft_seconds histogram and
     kvfuse_queue_depth;
  g. POST /v1/retrieve gives the chunks `kvprep search --json` gives;
  j. a second server with --max-batch 1: a retrieval question queued behind an answer in progress has its chunks
     retrieved and their KV loaded while it waits (chunk-cache hits at its admission, no extra misses);
  h. SIGTERM with 4 streams in flight: each finishes in full with [DONE], new connections are refused, the
     server exits 0 within the drain time.
Every check runs and reports PASS or FAIL; the exit status is 1 if any failed.

Usage: serve_test.py KVPREP KVRUN        (run by the test venv's python: scripts/setup-test-venv.sh)
"""
import http.client
import json
import math
import os
import queue
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback

import openai

READY_TIMEOUT_S = 120      # from the server's start to its "listening on" line
REQUEST_TIMEOUT_S = 120    # one HTTP request (the client's timeout)
DRAIN_S = 30               # --drain-seconds: after SIGTERM, how long requests in flight may take
DRAIN_TIMEOUT_S = DRAIN_S + 15  # SIGTERM to exit: the drain and the process's own teardown
MAX_TOKENS = 16
RECOMPUTE = 0.15
TOP_K = 2
THREADS = 2
METHODS = ["full", "reuse", "cacheblend", "a3", "fusion"]
MAX_BODY_BYTES = 65536
TIMING_KEYS = ["retrieve", "load", "select", "prefill", "ttft", "decode"]
READY_RE = re.compile(r"listening on http://127\.0\.0\.1:(\d+)")

CORPUS = [
    ("Volcano", "A volcano is a rupture in the crust where lava, ash and gases escape."),
    ("Glacier", "A glacier is a persistent body of dense ice that moves under its own weight."),
    ("Violin", "The violin is a wooden string instrument played with a bow."),
    ("Saturn", "Saturn is the sixth planet from the Sun, known for its rings."),
    ("Lighthouse", "A lighthouse is a tower with a bright lamp that guides ships at night."),
    ("Honeybee", "The honeybee collects nectar from flowers and makes honey in its hive."),
    ("Desert", "A desert is a dry region that receives less than 250 millimetres of rain a year."),
    ("Piano", "The piano is a keyboard instrument whose hammers strike steel strings."),
]
# Over this store the methods answer this question three ways (full; reuse and a3; cacheblend and fusion), so an
# answer from the wrong method shows.
METHOD_QUESTION = "How is the violin played?"
QUESTIONS = [
    "Which planet has rings?",
    "What escapes from a volcano?",
    "What is a glacier made of?",
    "How is the violin played?",
    "What guides ships at night?",
    "What does the honeybee make?",
    "How much rain does a desert receive?",
    "What strikes the strings of a piano?",
]


class CheckFailed(Exception):
    pass


def check(cond, message):
    if not cond:
        raise CheckFailed(message)


def short(data, n=400):
    text = data.decode("utf-8", "replace") if isinstance(data, (bytes, bytearray)) else str(data)
    return text if len(text) <= n else text[:n] + f"... ({len(text)} chars)"


# --- the store and the CLI's answers -----------------------------------------------------------------------------

def run_cli(argv, what):
    r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=600)
    if r.returncode != 0:
        raise CheckFailed(f"{what} exited {r.returncode}: {' '.join(argv)}\nstderr: {short(r.stderr, 2000)}")
    return r.stdout


def build_store(kvprep, work):
    """The store kvrun_cli_test.sh builds, through `kvprep run`: SmolLM2, both KV modes."""
    corpus = os.path.join(work, "corpus.jsonl")
    with open(corpus, "w") as f:
        for i, (title, text) in enumerate(CORPUS, 1):
            f.write(json.dumps({"id": i, "title": title, "text": text}) + "\n")
    store = os.path.join(work, "store")
    pipeline = os.path.join(work, "pipeline.yaml")
    with open(pipeline, "w") as f:
        f.write(f"store: {store}\ncorpus: {corpus}\nmodel: smollm2\nthreads: {THREADS}\n"
                "neighbors: {top_n: 2}\n"
                "prefill: {modes: [independent, similarity], batch_tokens: 64, shard_mb: 1}\n")
    run_cli([kvprep, "run", pipeline], "kvprep run")
    return store


def ask_json(kvrun, store, question, method, max_tokens=MAX_TOKENS):
    out = run_cli([kvrun, "ask", "--store", store, "--question", question, "--method", method,
                   "--recompute", str(RECOMPUTE), "--top-k", str(TOP_K), "--max-tokens", str(max_tokens),
                   "--threads", str(THREADS), "--json", "--quiet"], f"kvrun ask --method {method}")
    return json.loads(out)


def search_json(kvprep, store, query, top_k):
    out = run_cli([kvprep, "search", "--store", store, "--query", query, "--top-k", str(top_k), "--json",
                   "--quiet"], "kvprep search")
    return json.loads(out)


# --- the server ---------------------------------------------------------------------------------------------------

class Server:
    """`kvrun serve` as a subprocess: stdout read by a thread (so the pipe never fills), stderr in a file."""

    def __init__(self, kvrun, store, work, name, extra=(), max_batch=8):
        self.name = name
        self.argv = [kvrun, "serve", "--store", store, "--port", "0", "--threads", str(THREADS),
                     "--max-batch", str(max_batch), *extra]
        self.stderr_path = os.path.join(work, f"{name}.stderr")
        self.stdout_lines = []
        self.clients = []
        self.port = None
        ready = queue.Queue()
        with open(self.stderr_path, "w") as err:
            self.proc = subprocess.Popen(self.argv, stdout=subprocess.PIPE, stderr=err, text=True, bufsize=1)

        def read_stdout():
            for line in self.proc.stdout:
                self.stdout_lines.append(line.rstrip("\n"))
                m = READY_RE.search(line)
                if m and self.port is None:
                    ready.put(int(m.group(1)))
            ready.put(None)  # stdout closed: the process ended (or closed it)

        threading.Thread(target=read_stdout, daemon=True).start()
        try:
            port = ready.get(timeout=READY_TIMEOUT_S)
        except queue.Empty:
            self.stop()
            raise CheckFailed(f"{name}: no 'listening on http://127.0.0.1:PORT' line on stdout within "
                              f"{READY_TIMEOUT_S} s ({' '.join(self.argv)}){self.output()}")
        if port is None:
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.stop()
            raise CheckFailed(f"{name}: exited {self.proc.returncode} before printing 'listening on "
                              f"http://127.0.0.1:PORT' ({' '.join(self.argv)}){self.output()}")
        self.port = port
        self.base = f"http://127.0.0.1:{port}"

    def output(self):
        try:
            with open(self.stderr_path) as f:
                err = f.read()
        except OSError:
            err = ""
        return (f"\n  stdout: {short(chr(10).join(self.stdout_lines), 1500)}"
                f"\n  stderr: {short(err[-3000:], 3000)}")

    def client(self, api_key="unused", **kw):
        c = openai.OpenAI(base_url=self.base + "/v1", api_key=api_key, max_retries=0, timeout=REQUEST_TIMEOUT_S,
                          **kw)
        self.clients.append(c)
        return c

    def close_clients(self):
        """Closes the clients' kept-alive connections (an idle one must not hold up a shutdown)."""
        for c in self.clients:
            c.close()
        self.clients = []

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=DRAIN_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def http_request(port, method, path, body=None, headers=None, timeout=REQUEST_TIMEOUT_S):
    """One request on a fresh connection: (status, headers with lower-case names, body bytes)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        hdrs = dict(headers or {})
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
            hdrs.setdefault("Content-Type", "application/json")
        elif isinstance(body, str):
            body = body.encode()
        try:
            conn.request(method, path, body=body, headers=hdrs)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server may answer (413) before it has read the whole body: its answer is still there
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        conn.close()


def json_body(status, headers, body, what):
    check("application/json" in headers.get("content-type", ""),
          f"{what}: Content-Type is {headers.get('content-type')!r}, not application/json (status {status}, "
          f"body {short(body)})")
    try:
        return json.loads(body)
    except ValueError as e:
        raise CheckFailed(f"{what}: the body is not JSON ({e}): {short(body)}")


def chat_body(model, question, method, stream=False, **kvfuse):
    body = {"model": model, "messages": [{"role": "user", "content": question}], "max_tokens": MAX_TOKENS,
            "temperature": 0, "kvfuse": {"method": method, "recompute": RECOMPUTE, "top_k": TOP_K, **kvfuse}}
    if stream:
        body["stream"] = True
    return body


def chat(client, model, question, method, max_tokens=MAX_TOKENS, **kw):
    return client.chat.completions.create(
        model=model, messages=[{"role": "user", "content": question}], max_tokens=max_tokens, temperature=0,
        extra_body={"kvfuse": {"method": method, "recompute": RECOMPUTE, "top_k": TOP_K}}, **kw)


def kvfuse_of(resp, what):
    extra = resp.model_extra or {}
    kv = extra.get("kvfuse", resp.to_dict().get("kvfuse"))
    check(isinstance(kv, dict), f"{what}: the response has no 'kvfuse' object: {short(resp.to_json())}")
    return kv


def sse_events(port, body, what, on_headers=None):
    """POSTs a streaming chat request; returns (the data fields in order, the raw text). Reads line by line."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=REQUEST_TIMEOUT_S)
    try:
        conn.request("POST", "/v1/chat/completions", body=json.dumps(body).encode(),
                     headers={"Content-Type": "application/json"})
        r = conn.getresponse()
        if on_headers:
            on_headers()
        if r.status != 200:
            raise CheckFailed(f"{what}: status {r.status}: {short(r.read())}")
        ctype = r.getheader("Content-Type", "")
        check(ctype.startswith("text/event-stream"), f"{what}: Content-Type {ctype!r}, not text/event-stream")
        raw, data = [], []
        while True:
            line = r.readline()
            if not line:
                break
            text = line.decode("utf-8")
            raw.append(text)
            if text.startswith("data:"):
                data.append(text[5:].strip())
        return data, "".join(raw)
    finally:
        conn.close()


def sse_text(data, what):
    """The content of a stream's chat.completion.chunk events, and whether one carried a finish_reason."""
    text, finish = "", None
    for d in data:
        if d == "[DONE]":
            continue
        try:
            ev = json.loads(d)
        except ValueError as e:
            raise CheckFailed(f"{what}: an SSE data line is not JSON ({e}): {d!r}")
        check(ev.get("object") == "chat.completion.chunk", f"{what}: event object {ev.get('object')!r}, not "
              f"'chat.completion.chunk': {d!r}")
        for c in ev.get("choices", []):
            text += (c.get("delta") or {}).get("content") or ""
            finish = c.get("finish_reason") or finish
    return text, finish


def expect_error(status, headers, body, want_status, what, names=()):
    """An OpenAI error object {"error": {message, type, param, code}} whose message names each of `names`."""
    check(status == want_status, f"{what}: status {status}, expected {want_status}: {short(body)}")
    obj = json_body(status, headers, body, what)
    err = obj.get("error") if isinstance(obj, dict) else None
    check(isinstance(err, dict), f"{what}: no 'error' object in {short(body)}")
    missing = [k for k in ("message", "type", "param", "code") if k not in err]
    check(not missing, f"{what}: the error object lacks {missing}: {short(body)}")
    check(isinstance(err["message"], str) and err["message"], f"{what}: empty error message: {short(body)}")
    check(isinstance(err["type"], str) and err["type"], f"{what}: error type {err['type']!r} is no name")
    for n in names:
        check(n in err["message"], f"{what}: the error message does not name {n!r}: {err['message']!r}")
    return err


# --- the checks ---------------------------------------------------------------------------------------------------

class Context:
    def __init__(self, kvprep, kvrun, work, store, server):
        self.kvprep, self.kvrun, self.work, self.store, self.server = kvprep, kvrun, work, store, server
        self.model = None

    def model_id(self):
        if self.model is None:
            status, headers, body = http_request(self.server.port, "GET", "/v1/models")
            check(status == 200, f"GET /v1/models: status {status}: {short(body)}")
            self.model = json_body(status, headers, body, "GET /v1/models")["data"][0]["id"]
        return self.model


def test_a_health_and_models(ctx):
    status, headers, body = http_request(ctx.server.port, "GET", "/health")
    check(status == 200, f"GET /health: status {status}, expected 200: {short(body)}")
    obj = json_body(status, headers, body, "GET /health")
    check(isinstance(obj, dict) and obj.get("status") == "ok", f"GET /health: {short(body)}, expected "
          '{"status": "ok"}')

    status, headers, body = http_request(ctx.server.port, "GET", "/v1/models")
    check(status == 200, f"GET /v1/models: status {status}, expected 200: {short(body)}")
    obj = json_body(status, headers, body, "GET /v1/models")
    check(isinstance(obj, dict) and obj.get("object") == "list", f"GET /v1/models: object is not 'list': "
          f"{short(body)}")
    data = obj.get("data")
    check(isinstance(data, list) and len(data) >= 1, f"GET /v1/models: 'data' is not a non-empty list: {short(body)}")
    m = data[0]
    check(isinstance(m.get("id"), str) and m["id"], f"GET /v1/models: data[0].id is not a name: {short(body)}")
    check(m.get("object") == "model", f"GET /v1/models: data[0].object is {m.get('object')!r}, not 'model'")
    ids = [x.id for x in ctx.server.client().models.list()]
    check(ids and ids[0] == m["id"], f"client.models.list() gives {ids}, GET /v1/models {m['id']!r}")
    ctx.model = m["id"]


def test_b_methods_match_kvrun_ask(ctx):
    client = ctx.server.client()
    question = METHOD_QUESTION
    problems = []
    for method in METHODS:
        try:
            check_method(ctx, client, question, method)
        except CheckFailed as e:
            problems.append(str(e))
    check(not problems, f"{len(problems)} of {len(METHODS)} methods:\n    " + "\n    ".join(problems))


def check_method(ctx, client, question, method):
    want = ask_json(ctx.kvrun, ctx.store, question, method)
    what = f"chat completion, method {method}"
    resp = chat(client, ctx.model_id(), question, method)
    check(resp.object == "chat.completion", f"{what}: object {resp.object!r}, not 'chat.completion'")
    check(len(resp.choices) == 1, f"{what}: {len(resp.choices)} choices, expected 1")
    got = resp.choices[0].message.content
    check(got == want["answer"], f"{what}: the server answers {got!r}, kvrun ask --json answers "
          f"{want['answer']!r} (question {question!r}, recompute {RECOMPUTE}, top-k {TOP_K})")
    check(resp.choices[0].message.role == "assistant", f"{what}: role {resp.choices[0].message.role!r}")
    check(resp.choices[0].finish_reason in ("stop", "length"),
          f"{what}: finish_reason {resp.choices[0].finish_reason!r}, expected 'stop' or 'length'")
    check(resp.usage is not None, f"{what}: no usage")
    check(resp.usage.prompt_tokens > 0, f"{what}: usage.prompt_tokens {resp.usage.prompt_tokens}, expected > 0")
    check(resp.usage.completion_tokens > 0,
          f"{what}: usage.completion_tokens {resp.usage.completion_tokens}, expected > 0")
    kv = kvfuse_of(resp, what)
    ids = kv.get("chunk_ids")
    check(isinstance(ids, list) and all(isinstance(i, str) and re.fullmatch(r"[0-9a-f]{16}", i) for i in ids),
          f"{what}: kvfuse.chunk_ids {ids!r} is not a list of 16-digit hex strings")
    check(ids == want["chunk_ids"], f"{what}: kvfuse.chunk_ids {ids}, kvrun ask's {want['chunk_ids']}")
    timings = kv.get("timings_ms")
    check(isinstance(timings, dict), f"{what}: kvfuse.timings_ms is {timings!r}, not an object")
    missing = [k for k in TIMING_KEYS if k not in timings]
    check(not missing, f"{what}: kvfuse.timings_ms lacks {missing}: {timings}")
    bad = {k: timings[k] for k in TIMING_KEYS
           if not isinstance(timings[k], (int, float)) or isinstance(timings[k], bool) or timings[k] < 0}
    check(not bad, f"{what}: kvfuse.timings_ms values not non-negative numbers: {bad}")


def test_c_streaming(ctx):
    client = ctx.server.client()
    question, method = QUESTIONS[1], "fusion"
    whole = chat(client, ctx.model_id(), question, method).choices[0].message.content
    text, finish = "", None
    for ev in chat(client, ctx.model_id(), question, method, stream=True):
        check(ev.object == "chat.completion.chunk", f"client stream: event object {ev.object!r}")
        for c in ev.choices:
            text += c.delta.content or ""
            finish = c.finish_reason or finish
    check(text == whole, f"client stream: the streamed text {text!r} differs from the answer {whole!r}")
    check(finish in ("stop", "length"), f"client stream: no event carried finish_reason 'stop' or 'length' "
          f"(last seen {finish!r})")

    data, raw = sse_events(ctx.server.port, chat_body(ctx.model_id(), question, method, stream=True), "raw SSE")
    check(data and data[-1] == "[DONE]", f"raw SSE: the stream does not end with 'data: [DONE]': {short(raw[-300:])}")
    check(raw.rstrip().endswith("data: [DONE]"), f"raw SSE: text after 'data: [DONE]': {short(raw[-300:])}")
    check(data.count("[DONE]") == 1, "raw SSE: more than one [DONE]")
    raw_text, _ = sse_text(data, "raw SSE")
    check(raw_text == whole, f"raw SSE: the streamed text {raw_text!r} differs from the answer {whole!r}")


def test_d_concurrent_clients(ctx):
    model = ctx.model_id()
    jobs = [(q, METHODS[i % len(METHODS)]) for i, q in enumerate(QUESTIONS)]
    client = ctx.server.client()
    alone = [chat(client, model, q, m).choices[0].message.content for q, m in jobs]
    together = [None] * len(jobs)
    errors = [None] * len(jobs)
    barrier = threading.Barrier(len(jobs))

    def one(i):
        q, m = jobs[i]
        c = ctx.server.client()
        try:
            barrier.wait(timeout=30)
            together[i] = chat(c, model, q, m).choices[0].message.content
        except Exception as e:  # reported below, per client
            errors[i] = f"{type(e).__name__}: {e}"

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(jobs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=REQUEST_TIMEOUT_S + 30)
    problems = []
    for i, (q, m) in enumerate(jobs):
        if errors[i]:
            problems.append(f"client {i} ({m}, {q!r}) failed: {errors[i]}")
        elif together[i] != alone[i]:
            problems.append(f"client {i} ({m}, {q!r}) got {together[i]!r} concurrently, {alone[i]!r} alone")
    check(not problems, f"{len(problems)} of {len(jobs)} concurrent clients:\n    " + "\n    ".join(problems))


def test_e_bad_requests(ctx):
    port, model = ctx.server.port, ctx.model_id()
    chat_path = "/v1/chat/completions"
    problems = []

    def case(what, fn):
        try:
            fn()
        except CheckFailed as e:
            problems.append(str(e))
        except Exception as e:  # the connection or the client failed: this case fails, the others still run
            problems.append(f"{what}: {type(e).__name__}: {e}")

    def post(body, headers=None):
        return http_request(port, "POST", chat_path, body, headers)

    case("malformed JSON", lambda: expect_error(
        *post(b'{"model": "x", "messages": [', {"Content-Type": "application/json"}), 400, "malformed JSON"))
    case("no messages", lambda: expect_error(
        *post({"model": model, "max_tokens": MAX_TOKENS}), 400, "no messages", names=["messages"]))

    def with_body(what, names, **change):
        body = chat_body(model, QUESTIONS[0], "reuse")
        kv = change.pop("kvfuse", {})
        body.update(change)
        body["kvfuse"].update(kv)
        if "chunk_ids" in kv:
            del body["kvfuse"]["top_k"]  # given chunks, nothing retrieved
        case(what, lambda: expect_error(*post(body), 400, what, names=names))

    with_body("temperature 0.7", ["temperature", "0.7"], temperature=0.7)
    with_body("kvfuse.recompute 1.5", ["recompute", "1.5"], kvfuse={"recompute": 1.5})
    with_body("unknown kvfuse field", ["bogus"], kvfuse={"bogus": 1})
    with_body("unknown chunk id", ["chunk_ids", "ffffffffffffffff"], kvfuse={"chunk_ids": ["ffffffffffffffff"]})

    def too_large():
        body = chat_body(model, QUESTIONS[0], "reuse")
        body["messages"][0]["content"] = "word " * (100_000 // 5)
        data = json.dumps(body).encode()
        check(len(data) > MAX_BODY_BYTES, "the test's body is not over the limit")
        expect_error(*post(data, {"Content-Type": "application/json"}), 413,
                     f"a {len(data)}-byte body (--max-body-bytes {MAX_BODY_BYTES})")
    case("body over the limit", too_large)

    # The client's own error for the same kind of request: a 400 it raises as BadRequestError.
    def client_400():
        try:
            ctx.server.client().chat.completions.create(
                model=model, messages=[{"role": "user", "content": QUESTIONS[0]}], max_tokens=MAX_TOKENS,
                temperature=0.7)
        except openai.BadRequestError as e:
            check(e.status_code == 400, f"client, temperature 0.7: status {e.status_code}")
            return
        raise CheckFailed("client, temperature 0.7: no BadRequestError raised")
    case("client 400", client_400)

    # A second server that asks for a key.
    key = "kvf-test-key-8d1f2c"
    key_file = os.path.join(ctx.work, "api_key")
    with open(key_file, "w") as f:
        f.write(key + "\n")
    os.chmod(key_file, 0o600)
    try:
        keyed = Server(ctx.kvrun, ctx.store, ctx.work, "serve-api-key", ["--api-key-file", key_file])
    except CheckFailed as e:
        problems.append(f"the server with --api-key-file: {e}")
        keyed = None
    if keyed:
        try:
            body = chat_body(model, QUESTIONS[0], "reuse")
            case("no key", lambda: expect_error(*http_request(keyed.port, "POST", chat_path, body), 401,
                                                "--api-key-file, no Authorization header"))
            case("wrong key", lambda: expect_error(
                *http_request(keyed.port, "POST", chat_path, body, {"Authorization": "Bearer not-the-key"}), 401,
                "--api-key-file, a wrong key"))

            def client_wrong_key():
                try:
                    chat(keyed.client(api_key="not-the-key"), model, QUESTIONS[0], "reuse")
                except openai.AuthenticationError as e:
                    check(e.status_code == 401, f"client with a wrong key: status {e.status_code}")
                    return
                raise CheckFailed("client with a wrong key: no AuthenticationError (401) raised")
            case("client wrong key", client_wrong_key)

            def client_right_key():
                try:
                    resp = chat(keyed.client(api_key=key), model, QUESTIONS[0], "reuse")
                except openai.APIError as e:
                    raise CheckFailed(f"client with the right key: {type(e).__name__}: {e}")
                check(resp.choices and resp.choices[0].message.content is not None,
                      "client with the right key: no answer")
            case("client right key", client_right_key)
        finally:
            keyed.stop()
    check(not problems, f"{len(problems)} bad-request checks failed:\n    " + "\n    ".join(problems))


SAMPLE_RE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)(\s+-?\d+)?$')
LABEL_RE = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"((?:[^"\\]|\\.)*)"\s*(,|$)')


def parse_prometheus(text):
    """Prometheus text exposition: {name: [(labels, value)]} and {name: type}; raises CheckFailed naming a bad line."""
    samples, types = {}, {}
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        if line.startswith("#"):
            parts = line.split(None, 3)
            if len(parts) >= 2 and parts[1] in ("HELP", "TYPE"):
                check(len(parts) >= 3 and re.fullmatch(r"[a-zA-Z_:][a-zA-Z0-9_:]*", parts[2]),
                      f"/metrics line {n}: {parts[1]} without a metric name: {line!r}")
                if parts[1] == "TYPE":
                    check(len(parts) == 4 and parts[3].strip() in
                          ("counter", "gauge", "histogram", "summary", "untyped"),
                          f"/metrics line {n}: bad TYPE: {line!r}")
                    check(parts[2] not in types, f"/metrics line {n}: a second TYPE for {parts[2]}")
                    types[parts[2]] = parts[3].strip()
            continue
        m = SAMPLE_RE.match(line)
        check(m, f"/metrics line {n} is not 'name{{labels}} value' or 'name value': {line!r}")
        name, labels_text, value_text = m.group(1), m.group(3), m.group(4)
        labels = {}
        if labels_text:
            pos = 0
            while pos < len(labels_text):
                lm = LABEL_RE.match(labels_text, pos)
                check(lm and lm.end() > pos, f"/metrics line {n}: bad labels {{{labels_text}}}")
                labels[lm.group(1)] = lm.group(2)
                pos = lm.end()
        try:
            value = float(value_text)  # also +Inf, -Inf, NaN
        except ValueError:
            raise CheckFailed(f"/metrics line {n}: value {value_text!r} is not a float: {line!r}")
        samples.setdefault(name, []).append((labels, value))
    return samples, types


def test_f_metrics(ctx):
    status, headers, body = http_request(ctx.server.port, "GET", "/metrics")
    check(status == 200, f"GET /metrics: status {status}: {short(body)}")
    ctype = headers.get("content-type", "")
    check(ctype.startswith("text/plain"), f"GET /metrics: Content-Type {ctype!r}, not text/plain")
    samples, types = parse_prometheus(body.decode("utf-8"))
    for name in ("kvfuse_requests_total", "kvfuse_queue_depth"):
        check(name in samples, f"/metrics has no {name} sample; names: {sorted(samples)}")
    check(sum(v for _, v in samples["kvfuse_requests_total"]) > 0,
          f"/metrics: kvfuse_requests_total is 0 after the requests above: {samples['kvfuse_requests_total']}")
    h = "kvfuse_ttft_seconds"
    check(types.get(h) == "histogram", f"/metrics: '# TYPE {h} histogram' missing (TYPE {types.get(h)!r})")
    for suffix in ("_bucket", "_sum", "_count"):
        check(h + suffix in samples, f"/metrics: the histogram {h} has no {h + suffix}")
    # Per label set (other than le): buckets cumulative, +Inf equal to _count; ttft observed for the requests.
    series = {}
    for labels, value in samples[h + "_bucket"]:
        check("le" in labels, f"/metrics: a {h}_bucket without an le label: {labels}")
        key = tuple(sorted((k, v) for k, v in labels.items() if k != "le"))
        series.setdefault(key, []).append((float(labels["le"]), value))
    counts = {tuple(sorted(l.items())): v for l, v in samples[h + "_count"]}
    for key, buckets in series.items():
        buckets.sort()
        check(buckets[-1][0] == math.inf, f"/metrics: {h}{dict(key)} has no le=\"+Inf\" bucket")
        values = [v for _, v in buckets]
        check(values == sorted(values), f"/metrics: {h}{dict(key)} buckets are not cumulative: {buckets}")
        check(counts.get(key) == values[-1], f"/metrics: {h}_count{dict(key)} {counts.get(key)} differs from "
              f"its +Inf bucket {values[-1]}")
    check(sum(counts.values()) > 0, f"/metrics: {h}_count is 0 after the requests above")


def test_g_retrieve(ctx):
    query = QUESTIONS[0]
    status, headers, body = http_request(ctx.server.port, "POST", "/v1/retrieve", {"query": query, "top_k": 2})
    check(status == 200, f"POST /v1/retrieve: status {status}: {short(body)}")
    obj = json_body(status, headers, body, "POST /v1/retrieve")
    data = obj.get("data") if isinstance(obj, dict) else None
    check(isinstance(data, list) and len(data) == 2, f"POST /v1/retrieve: 'data' is not a list of 2: {short(body)}")
    for d in data:
        missing = [k for k in ("chunk_id", "score", "doc_id", "title", "text") if k not in d]
        check(not missing, f"POST /v1/retrieve: an entry lacks {missing}: {d}")
    hits = search_json(ctx.kvprep, ctx.store, query, 2)["hits"]
    check([d["chunk_id"] for d in data] == [h["chunk_id"] for h in hits],
          f"POST /v1/retrieve: chunk ids {[d['chunk_id'] for d in data]}, kvprep search "
          f"{[h['chunk_id'] for h in hits]}")
    for d, h in zip(data, hits):
        for k in ("doc_id", "title", "text"):
            check(str(d[k]) == str(h[k]), f"POST /v1/retrieve: chunk {d['chunk_id']} {k} {d[k]!r}, kvprep search "
                  f"{h[k]!r}")
        check(abs(float(d["score"]) - float(h["score"])) < 1e-4,
              f"POST /v1/retrieve: chunk {d['chunk_id']} score {d['score']}, kvprep search {h['score']}")


def test_h_sigterm_drains(ctx):
    server, model = ctx.server, ctx.model_id()
    jobs = [(QUESTIONS[i], METHODS[i % len(METHODS)]) for i in range(1, 5)]  # answers of 11 to 16 tokens
    client = server.client()
    want = [chat(client, model, q, m).choices[0].message.content for q, m in jobs]
    server.close_clients()
    results = [None] * len(jobs)
    done_at = [None] * len(jobs)
    started = threading.Semaphore(0)

    def one(i):
        q, m = jobs[i]
        try:
            results[i] = sse_events(server.port, chat_body(model, q, m, stream=True), f"stream {i}",
                                    on_headers=started.release)
        except Exception as e:  # reported below
            results[i] = e
            started.release()
        done_at[i] = time.monotonic()

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(jobs))]
    for t in threads:
        t.start()
    for _ in jobs:  # every stream has its response headers: the server is working on all four
        check(started.acquire(timeout=REQUEST_TIMEOUT_S), "SIGTERM: a stream got no response headers")
    signalled = time.monotonic()
    server.proc.send_signal(signal.SIGTERM)

    # New connections are refused once the server has handled the signal (it may take a moment).
    refused = False
    while time.monotonic() - signalled < 10:
        try:
            socket.create_connection(("127.0.0.1", server.port), timeout=2).close()
        except ConnectionRefusedError:
            refused = True
            break
        except OSError:
            pass
        time.sleep(0.05)

    for t in threads:
        t.join(timeout=DRAIN_TIMEOUT_S)
    try:
        status = server.proc.wait(timeout=max(1, DRAIN_TIMEOUT_S - (time.monotonic() - signalled)))
    except subprocess.TimeoutExpired:
        server.proc.kill()
        server.proc.wait()
        raise CheckFailed(f"SIGTERM: the server did not exit within {DRAIN_TIMEOUT_S} s{server.output()}")
    problems = []
    in_flight = sum(1 for t in done_at if t is not None and t > signalled)
    if in_flight == 0:
        problems.append("all 4 streams had ended before SIGTERM was sent: nothing was in flight")
    for i, (q, m) in enumerate(jobs):
        r = results[i]
        if r is None or isinstance(r, Exception):
            problems.append(f"stream {i} ({m}, {q!r}) failed: {type(r).__name__}: {r}")
            continue
        data, raw = r
        if not data or data[-1] != "[DONE]":
            problems.append(f"stream {i} ({m}, {q!r}) did not end with 'data: [DONE]': {short(raw[-300:])}")
        try:
            text, _ = sse_text(data, f"stream {i}")
        except CheckFailed as e:
            problems.append(str(e))
            continue
        if text != want[i]:
            problems.append(f"stream {i} ({m}, {q!r}) streamed {text!r}, the answer is {want[i]!r}")
    if not refused:
        problems.append("a new connection was still accepted 10 s after SIGTERM")
    if status != 0:
        problems.append(f"the server exited {status} after SIGTERM, expected 0")
    check(not problems, f"SIGTERM with {len(jobs)} streams in flight ({in_flight} still streaming at the "
          f"signal):\n    " + "\n    ".join(problems) + (server.output() if status != 0 else ""))


def test_i_new_store_generation(ctx):
    """A running server moves to a generation kvprep publishes while it runs: a document added to its store's corpus
    is found by the next questions, without a restart (docs/serve.md, "Store updates")."""
    work = os.path.join(ctx.work, "generation")
    os.makedirs(work)
    store = build_store(ctx.kvprep, work)
    server = Server(ctx.kvrun, store, work, "serve-generation", ["--reload-seconds", "0.5"])
    try:
        question = "Which bird is the emperor penguin?"
        client = server.client()
        model = client.models.list().data[0].id

        def sources():
            resp = client.chat.completions.create(model=model, messages=[{"role": "user", "content": question}],
                                                  max_tokens=4, temperature=0, extra_body={"kvfuse": {"top_k": 1}})
            return [s["title"] for s in kvfuse_of(resp, "chat")["sources"]]

        check("Penguin" not in sources(), "the store holds no penguin yet, but the server cites one")
        with open(os.path.join(work, "corpus.jsonl"), "a") as f:
            f.write(json.dumps({"id": 99, "title": "Penguin", "text": "The emperor penguin is the largest penguin, "
                                "a flightless bird that breeds in the Antarctic winter."}) + "\n")
        run_cli([ctx.kvprep, "run", os.path.join(work, "pipeline.yaml")], "kvprep run (update)")
        deadline = time.monotonic() + 60
        cited = []
        while time.monotonic() < deadline:
            cited = sources()
            if "Penguin" in cited:
                break
            time.sleep(0.5)
        check("Penguin" in cited, f"60 s after the update the server still cites {cited}{server.output()}")
        status, _, body = http_request(server.port, "GET", "/metrics")
        check(status == 200 and re.search(rb"^kvfuse_store_generation 2$", body, re.M),
              f"/metrics does not give generation 2: {short(body)}")
    finally:
        server.close_clients()
        server.stop()
    check(server.proc.returncode == 0, f"the server exited {server.proc.returncode}{server.output()}")


def metric_values(port, names):
    status, _, body = http_request(port, "GET", "/metrics")
    check(status == 200, f"GET /metrics: status {status}: {short(body)}")
    samples, _ = parse_prometheus(body.decode())
    return [samples[n][0][1] for n in names]


def test_j_queued_requests_prefetch(ctx):
    """With one decoding slot, a question that waits behind an answer in progress is retrieved and its chunks' KV
    loaded in the meantime, so its admission finds them in the chunk cache (docs/serve.md, "Scheduling")."""
    work = os.path.join(ctx.work, "prefetch")
    os.makedirs(work)
    server = Server(ctx.kvrun, ctx.store, work, "serve-one-slot", max_batch=1)
    try:
        client = server.client()
        model = client.models.list().data[0].id
        # The first answer runs its 64 tokens (about a second here), long enough for the second question to queue.
        first_q, queued_q = "Describe each of these places and things in detail, one paragraph each.", QUESTIONS[5]
        first_result, first_done = {}, [None]

        def first():
            try:
                first_result["resp"] = chat(client, model, first_q, "reuse", max_tokens=64)
            except Exception as e:  # reported below
                first_result["error"] = e
            first_done[0] = time.monotonic()

        t = threading.Thread(target=first)
        t.start()
        deadline = time.monotonic() + REQUEST_TIMEOUT_S
        while metric_values(server.port, ["kvfuse_active_sequences"])[0] < 1 and first_done[0] is None:
            check(time.monotonic() < deadline, "the first answer never became active")
            time.sleep(0.01)
        queued_sent = time.monotonic()
        queued = chat(server.client(), model, queued_q, "reuse")
        t.join(timeout=REQUEST_TIMEOUT_S)
        check("error" not in first_result, f"the first request failed: {first_result.get('error')!r}")
        check(first_done[0] is not None and first_done[0] > queued_sent,
              f"the first answer ({first_result['resp'].usage.completion_tokens} tokens) ended before the second "
              "question was sent: nothing was queued behind it")
        first_ids = kvfuse_of(first_result["resp"], "first")["chunk_ids"]
        queued_ids = kvfuse_of(queued, "queued")["chunk_ids"]
        check(set(queued_ids) - set(first_ids), f"the queued question reads only chunks the first read: {queued_ids}")
        hits, misses = metric_values(server.port, ["kvfuse_chunk_cache_hits_total",
                                                   "kvfuse_chunk_cache_misses_total"])
        distinct = len(set(first_ids) | set(queued_ids))
        check(misses == distinct, f"{misses} chunk-cache misses for {distinct} distinct chunks")
        check(hits >= len(queued_ids), f"{hits} chunk-cache hits: the queued question's {len(queued_ids)} chunks "
              "were not loaded while it waited")
    finally:
        server.close_clients()
        server.stop()
    check(server.proc.returncode == 0, f"the server exited {server.proc.returncode}{server.output()}")


TESTS = [test_a_health_and_models, test_b_methods_match_kvrun_ask, test_c_streaming, test_d_concurrent_clients,
         test_e_bad_requests, test_f_metrics, test_g_retrieve, test_i_new_store_generation, test_j_queued_requests_prefetch,
         test_h_sigterm_drains]


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__.rsplit("Usage:", 1)[1].strip())
    kvprep, kvrun = sys.argv[1:]
    print(f"openai {openai.__version__}, python {sys.version.split()[0]}", flush=True)
    work = tempfile.mkdtemp(prefix="kvf-serve-test-")
    server = None
    failed = []
    start = time.monotonic()
    try:
        store = build_store(kvprep, work)
        print(f"store built in {time.monotonic() - start:.1f} s", flush=True)
        server = Server(kvrun, store, work, "serve",
                        ["--max-body-bytes", str(MAX_BODY_BYTES), "--drain-seconds", str(DRAIN_S)])
        print(f"server listening on port {server.port}", flush=True)
        ctx = Context(kvprep, kvrun, work, store, server)
        for test in TESTS:
            t0 = time.monotonic()
            try:
                test(ctx)
                print(f"PASS {test.__name__} ({time.monotonic() - t0:.1f} s)", flush=True)
            except CheckFailed as e:
                failed.append(test.__name__)
                print(f"FAIL {test.__name__}: {e}", flush=True)
            except Exception as e:  # an exception from the client or the socket: a failure of this check
                failed.append(test.__name__)
                print(f"FAIL {test.__name__}: {type(e).__name__}: {e}\n{traceback.format_exc()}", flush=True)
            server.close_clients()
            if server.proc.poll() is not None and test is not TESTS[-1]:
                failed.append("server")
                print(f"FAIL the server exited {server.proc.returncode} during {test.__name__}{server.output()}",
                      flush=True)
                break
    except CheckFailed as e:
        failed.append("setup")
        print(f"FAIL setup: {e}", flush=True)
    finally:
        if server:
            server.stop()
        shutil.rmtree(work, ignore_errors=True)
    total = time.monotonic() - start
    if failed:
        print(f"FAILED: {', '.join(failed)} ({total:.1f} s)")
        sys.exit(1)
    print(f"ok: kvrun serve answers the OpenAI client: {len(TESTS)} checks ({total:.1f} s)")


if __name__ == "__main__":
    main()
