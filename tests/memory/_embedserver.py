"""A loopback embedding model speaking the OpenAI ``/v1/embeddings`` wire format.

Vectors are deterministic bags of words: each word lands on a hashed dimension, and words of
one synonym group share a dimension, so "database" and "sqlite" are close while sharing no
letters. Good enough to tell vector recall from lexical recall in tests.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

DIM = 64
SYNONYMS = (("database", "sqlite", "postgres", "storage"), ("module", "package", "import"))


def embed_text(text: str, *, dim: int = DIM, salt: str = "") -> list[float]:
    vec = [0.0] * dim
    for word in re.findall(r"\w+", text.lower()):
        key = next((g[0] for g in SYNONYMS if word in g), word)
        h = int(hashlib.sha256((salt + key).encode()).hexdigest(), 16)
        vec[h % dim] += 1.0
    return vec


class EmbeddingServer:
    """``with EmbeddingServer() as s: s.base_url`` → ``http://127.0.0.1:PORT/v1``."""

    def __init__(self, *, dim: int = DIM, fail_status: int | None = None) -> None:
        self.dim = dim
        self.fail_status = fail_status
        self.requests: list[dict[str, Any]] = []
        server_self = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server_self.requests.append(body)
                if self.path != "/v1/embeddings" or server_self.fail_status:
                    self._send(server_self.fail_status or 404, {"error": {"message": "no"}})
                    return
                inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
                data = [
                    {
                        "object": "embedding",
                        "index": i,
                        "embedding": embed_text(t, dim=server_self.dim, salt=body["model"]),
                    }
                    for i, t in enumerate(inputs)
                ]
                self._send(
                    200,
                    {
                        "object": "list",
                        "data": data,
                        "model": body["model"],
                        "usage": {"prompt_tokens": 1, "total_tokens": 1},
                    },
                )

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                raw = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def __enter__(self) -> EmbeddingServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join()
