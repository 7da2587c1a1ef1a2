"""Inline completion (``textDocument/inlineCompletion``) through driveros-lsp, against the
scripted FIM endpoint on loopback (the model answers at once, so what is left is ours).

1. server overhead per completion: each round times one completion straight to the endpoint
   (``driveros.llm.fim``, the same prefix and suffix) and one through ``driveros-lsp --stdio``
   (a new keystroke each time, so neither the cache nor reuse answers it); the overhead is the
   difference, p50/p99 over the rounds. Goal: p99 <= 5 ms.
2. a burst of 20 keystrokes 30 ms apart, each with its inline request as VS Code sends them,
   with the default debounce: the model requests it causes. Goal: <= 2.
3. the server's RSS after 1,000 completions and after ``BENCH_INLINE_N`` (default 10,000).
   Goal: flat. The same stretch gives the server's CPU time per completion (user + system,
   from /proc): the overhead measure a loaded machine does not blur.

``python bench/bench_inline.py`` (or ``python -m bench inline``).
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from lsprotocol import types as lsp
from pygls.lsp.client import LanguageClient

from bench._results import Row, goal_met, ratio, report
from driveros.llm.fim import CompletionsFim, FimRequest
from driveros.testing import ScriptedModelServer, Turn

ROUNDS = int(os.environ.get("BENCH_INLINE_ROUNDS", "300"))
TOTAL = int(os.environ.get("BENCH_INLINE_N", "10000"))
HEAD = "import math\n\n\ndef area(radius):\n"
TAIL = "\n\n\nprint(area(2.0))\n"


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _cpu_s(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


class _Editor:
    """One document in driveros-lsp, typed into line by line."""

    def __init__(self, client: LanguageClient, uri: str) -> None:
        self.client = client
        self.uri = uri
        self.version = 1

    def type_line(self, line: str) -> lsp.Position:
        self.version += 1
        self.client.text_document_did_change(
            lsp.DidChangeTextDocumentParams(
                text_document=lsp.VersionedTextDocumentIdentifier(
                    uri=self.uri, version=self.version
                ),
                content_changes=[
                    lsp.TextDocumentContentChangeWholeDocument(text=HEAD + line + TAIL)
                ],
            )
        )
        return lsp.Position(line=HEAD.count("\n"), character=len(line))

    def params(self, pos: lsp.Position) -> lsp.InlineCompletionParams:
        return lsp.InlineCompletionParams(
            text_document=lsp.TextDocumentIdentifier(uri=self.uri),
            position=pos,
            context=lsp.InlineCompletionContext(
                trigger_kind=lsp.InlineCompletionTriggerKind.Automatic
            ),
        )

    async def complete(self, line: str) -> Any:
        return await self.client.text_document_inline_completion_async(
            self.params(self.type_line(line))
        )


async def _server(
    root: Path, model: ScriptedModelServer, debounce_ms: int
) -> tuple[LanguageClient, _Editor, int]:
    client = LanguageClient("bench-inline", "1")

    @client.feature(lsp.WINDOW_LOG_MESSAGE)
    def on_log(params: Any) -> None:
        pass

    @client.feature(lsp.WINDOW_SHOW_MESSAGE)
    def on_show(params: Any) -> None:
        pass

    env = {
        **os.environ,
        "OPENAI_BASE_URL": model.openai_base_url,
        "OPENAI_API_KEY": "bench-key",
        "DRIVEROS_STATE_DIR": str(root / "state"),
    }
    await client.start_io(sys.executable, "-m", "driveros_lsp", "--stdio", env=env, cwd=str(root))
    settings = {
        "provider": "openai",
        "inlineCompletion": {
            "api": "completions",
            "model": "scripted-model",
            "debounceMs": debounce_ms,
        },
    }
    await client.initialize_async(
        lsp.InitializeParams(
            capabilities=lsp.ClientCapabilities(),
            root_uri=root.as_uri(),
            initialization_options=settings,
        )
    )
    client.initialized(lsp.InitializedParams())
    uri = (root / "area.py").as_uri()
    client.text_document_did_open(
        lsp.DidOpenTextDocumentParams(
            text_document=lsp.TextDocumentItem(
                uri=uri, language_id="python", version=1, text=HEAD + "    " + TAIL
            )
        )
    )
    server = client._server  # type: ignore[attr-defined]
    return client, _Editor(client, uri), server.pid


async def _stop(client: LanguageClient) -> None:
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()


async def _overhead(root: Path) -> list[Row]:
    async with ScriptedModelServer([Turn(text="x")], repeat_last=True) as model:
        client, editor, pid = await _server(root, model, debounce_ms=0)
        direct = CompletionsFim("scripted-model", base_url=model.openai_base_url, api_key="k")
        try:
            await editor.complete("    warm")  # imports, environment, the HTTP client
            await direct.complete(FimRequest(prefix=HEAD + "    warm", suffix=TAIL))
            overheads: list[float] = []
            for i in range(ROUNDS):
                line = f"    r{i}"
                start = time.perf_counter()
                await direct.complete(FimRequest(prefix=HEAD + line, suffix=TAIL))
                model_ms = (time.perf_counter() - start) * 1000
                start = time.perf_counter()
                result = await editor.complete(line)
                server_ms = (time.perf_counter() - start) * 1000
                assert result is not None and result.items, "no completion"
                overheads.append(server_ms - model_ms)
            print(
                f"server overhead per completion ({ROUNDS} rounds): "
                f"p50 {statistics.median(overheads):.2f} ms, p99 {_pct(overheads, 0.99):.2f} ms "
                "(goal p99 <= 5 ms)"
            )
            before = len(model.received)
            for i in range(1000):
                await editor.complete(f"    m{i}")
            rss_1k = _rss_mib(pid)
            cpu_1k, wall_1k = _cpu_s(pid), time.perf_counter()
            marks: list[str] = []
            for i in range(1000, TOTAL):
                await editor.complete(f"    m{i}")
                if (i + 1) % 2500 == 0:
                    marks.append(f"{i + 1:,}: {_rss_mib(pid):.1f}")
            rss_n = _rss_mib(pid)
            n = TOTAL - 1000
            cpu_ms = (_cpu_s(pid) - cpu_1k) * 1000 / n
            wall_ms = (time.perf_counter() - wall_1k) * 1000 / n
            print(
                f"server CPU per completion over {n:,} completions: {cpu_ms:.2f} ms "
                f"(wall {wall_ms:.2f} ms each, model and client included)"
            )
            print(
                f"server RSS after 1,000 completions {rss_1k:.1f} MiB, after {TOTAL:,} "
                f"{rss_n:.1f} MiB ({len(model.received) - before} model requests; goal: flat); "
                f"MiB along the way: {', '.join(marks)}"
            )
            p50, p99 = statistics.median(overheads), _pct(overheads, 0.99)
            same = "interleaved with the direct FIM call to the scripted endpoint"
            return [
                Row(
                    benchmark=f"inline completion, server overhead per completion, p50, "
                    f"{ROUNDS} rounds {same} (`make bench ARGS=inline`)",
                    measured=f"{p50:.2f} ms",
                    baseline="the direct model call, same round",
                    ratio=f"+{p50:.2f} ms",
                ),
                Row(
                    benchmark="inline completion, server overhead per completion, p99 (same run)",
                    measured=f"{p99:.2f} ms",
                    baseline="the direct model call, same round",
                    ratio=f"+{p99:.2f} ms",
                    goal=goal_met("<= 5 ms", p99 <= 5),
                ),
                Row(
                    benchmark=f"inline completion, server CPU per completion over {n:,} "
                    "completions (same run)",
                    measured=f"{cpu_ms:.2f} ms",
                    baseline=f"{wall_ms:.2f} ms wall each, model and client included",
                    ratio=ratio(cpu_ms, wall_ms),
                ),
                Row(
                    benchmark=f"inline completion, server RSS after {TOTAL:,} completions "
                    "(same run)",
                    measured=f"{rss_n:.1f} MiB",
                    baseline=f"{rss_1k:.1f} MiB after 1,000",
                    ratio=ratio(rss_n, rss_1k),
                    goal=goal_met("flat", rss_n <= rss_1k * 1.1),
                ),
            ]
        finally:
            await direct.aclose()
            await _stop(client)


async def _burst(root: Path) -> list[Row]:
    async with ScriptedModelServer([Turn(text="x")], repeat_last=True) as model:
        client, editor, _pid = await _server(root, model, debounce_ms=75)
        try:
            await editor.complete("    warm")  # the provider is built once
            before = len(model.received)
            pending = []
            line = "    "
            for ch in "abcdefghijklmnopqrst":
                line += ch
                pos = editor.type_line(line)
                pending.append(
                    asyncio.ensure_future(
                        client.text_document_inline_completion_async(editor.params(pos))
                    )
                )
                await asyncio.sleep(0.03)
            answers = await asyncio.gather(*pending)
            shown = sum(1 for a in answers if a is not None and a.items)
            print(
                f"burst of 20 keystrokes 30 ms apart (debounce 75 ms): "
                f"{len(model.received) - before} model requests, {shown} answers with items "
                "(goal <= 2 requests)"
            )
            asked = len(model.received) - before
            return [
                Row(
                    benchmark="inline completion, model requests from 20 keystrokes 30 ms "
                    "apart, debounce 75 ms (same run)",
                    measured=str(asked),
                    baseline="20 keystrokes",
                    ratio=ratio(asked, 20),
                    goal=goal_met("<= 2", asked <= 2),
                )
            ]
        finally:
            await _stop(client)


async def _main() -> None:
    with tempfile.TemporaryDirectory(prefix="bench-inline-") as tmp:
        root = Path(tmp)
        (root / "area.py").write_text(HEAD + "    " + TAIL)
        rows = await _overhead(root)
        if os.environ.get("BENCH_INLINE_PART") != "overhead":
            rows += await _burst(root)
    report("inline", rows)


def main() -> None:
    asyncio.run(_main())


if __name__ == "__main__":
    main()
