#!/usr/bin/env python3
"""Checks of server.py over real HTTP: `python tools/embed-server/test_server.py` (needs the
venv of README.md; loads the model once, ~2 s)."""
from __future__ import annotations

import json
import os
import sys
import threading
import unittest
import urllib.error
import urllib.request
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))
import server  # noqa: E402


class ServerTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        args = server.parse_args(["--port", "0", "--quiet", "--max-tokens", "16"])
        started = threading.Event()

        def ready(httpd):
            cls.httpd = httpd
            started.set()

        cls.thread = threading.Thread(target=server.serve, args=(args, ready), daemon=True)
        cls.thread.start()
        assert started.wait(60), "server did not start"
        cls.base = f"http://127.0.0.1:{cls.httpd.server_address[1]}"

    @classmethod
    def tearDownClass(cls):
        cls.httpd.shutdown()
        cls.thread.join(10)

    def post(self, path: str, body) -> tuple[int, dict]:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        req = urllib.request.Request(self.base + path, data=data, headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read())

    def test_batch_in_order_unit_vectors_and_published_similarity(self):
        texts = ["The weather is lovely today.", "It's so sunny outside!", "He drove to the stadium."]
        # Out of length order, to exercise the sort-and-restore batching.
        status, got = self.post("/api/embed", {"model": "all-minilm", "input": [texts[2], texts[0], texts[1]]})
        self.assertEqual(status, 200)
        stadium, weather, sunny = got["embeddings"]
        self.assertEqual(len(weather), 384)
        dot = lambda a, b: sum(x * y for x, y in zip(a, b))  # noqa: E731
        self.assertAlmostEqual(dot(weather, weather), 1.0, places=4)
        self.assertAlmostEqual(dot(weather, sunny), 0.6660, delta=6e-4)
        self.assertAlmostEqual(dot(weather, stadium), 0.1046, delta=6e-4)
        self.assertEqual(got["prompt_eval_count"], sum(len(server_ids(t)) for t in texts))

    def test_single_string_and_legacy_endpoint_agree(self):
        _, a = self.post("/api/embed", {"model": "all-minilm-l6-v2", "input": "hello world"})
        _, b = self.post("/api/embeddings", {"model": "all-minilm-l6-v2", "prompt": "hello world"})
        self.assertEqual(len(a["embeddings"]), 1)
        for x, y in zip(a["embeddings"][0], b["embedding"]):
            self.assertAlmostEqual(x, y, places=5)

    def test_truncation_keeps_sep_and_can_be_refused(self):
        long = " ".join(["word"] * 40)
        status, got = self.post("/api/embed", {"model": "all-minilm", "input": [long]})
        self.assertEqual((status, got["prompt_eval_count"]), (200, 16))
        status, got = self.post("/api/embed", {"model": "all-minilm", "input": [long], "truncate": False})
        self.assertEqual(status, 400)
        self.assertIn("context length", got["error"])

    def test_bad_requests(self):
        cases = [
            ({"model": "nomic-embed-text", "input": ["x"]}, 404),
            ({"model": "all-minilm", "input": [1, 2]}, 400),
            ({"model": "all-minilm"}, 400),
            ([1, 2], 400),
            (b"{not json", 400),
        ]
        for body, want in cases:
            status, got = self.post("/api/embed", body)
            self.assertEqual(status, want, body)
            self.assertIn("error", got)


def server_ids(text: str) -> list[int]:
    return ServerTest.httpd.RequestHandlerClass.encoder.ids(text)[0]


if __name__ == "__main__":
    unittest.main()
