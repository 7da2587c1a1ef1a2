"""Checks the semantic tests make on every tier (the local sandbox and docker): the same
assertions, given the tier's sandbox and the tools over it."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from tests.semantic._oracle import Oracle, places

from driveros.sandbox import Sandbox
from driveros.semantic import LanguageServerError, SemanticTools
from driveros.semantic._client import frame

#: Kills (or signals, with another command) the language servers running in a sandbox.
EACH_SERVER = 'for p in /proc/[0-9]*; do grep -qa "[l]angserver" "$p/cmdline" 2>/dev/null && '


async def answers_follow_the_agents_edits(
    tools: SemanticTools, sandbox: Sandbox, root: Path
) -> None:
    """The python project (tests/semantic/test_semantic_python.py): an edit made through the
    fence reaches the server before its next answer, and so does its undoing."""
    before = await tools.references("pkg/other.py", 1, 5, None)
    assert len(places(before.text)) == 3
    text = (root / "main.py").read_text()
    await sandbox.write_file("main.py", text + "helper()\n")
    tools.touched(["main.py"])
    after = await tools.references("pkg/other.py", 1, 5, None)
    assert ("main.py", 5, 1) in places(after.text)
    await sandbox.write_file("main.py", text)
    tools.touched(["main.py"])
    again = await tools.references("pkg/other.py", 1, 5, None)
    assert places(again.text) == places(before.text)


async def cancellation_keeps_the_server(tools: SemanticTools) -> None:
    """A references call cancelled while its request is pending: the request is cancelled,
    nothing stays pending, the same server answers the next one."""
    await tools.hover("main.py", 4, 7, None)  # started and warm
    session = tools.sessions["basedpyright"]
    for _ in range(50):  # a warm server may answer before the request is seen pending
        task = asyncio.ensure_future(tools.references("main.py", 4, 7, None))
        while not session.client._pending and not task.done():  # on its way to the server
            await asyncio.sleep(0)
        if not task.done():
            break
        await task
    else:
        pytest.fail("every request was answered before it could be cancelled")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not session.client._pending
    assert tools.sessions["basedpyright"] is session and session.client.alive
    assert len(places((await tools.references("main.py", 4, 7, None)).text)) == 4


async def cancelled_before_dispatch_keeps_answering(tools: SemanticTools) -> None:
    """A burst of references requests whose cancel reaches basedpyright before it dispatches
    them (each request and its ``$/cancelRequest`` in one write): once they are answered, the
    next references are answered by the same server. With pyright's default message-based
    cancellation, every references request after such a one failed ("this._token.cancel is
    not a function")."""
    await tools.hover("main.py", 4, 7, None)
    session = tools.sessions["basedpyright"]
    params = {
        "textDocument": {"uri": session.uri("main.py")},
        "position": {"line": 3, "character": 6},
        "context": {"includeDeclaration": True},
    }
    ids = range(10**6, 10**6 + 5)
    loop = asyncio.get_running_loop()
    answers = [session.client._pending.setdefault(n, loop.create_future()) for n in ids]
    ask = {"jsonrpc": "2.0", "method": "textDocument/references", "params": params}
    await session.client._proc.write(
        b"".join(
            frame({**ask, "id": n})
            + frame({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": n}})
            for n in ids
        )
    )
    await asyncio.gather(*answers, return_exceptions=True)  # each answered (cancelled)
    got = await tools.references("main.py", 4, 7, None)
    assert len(places(got.text)) == 4
    assert tools.sessions["basedpyright"] is session


async def a_crashed_server_is_restarted(tools: SemanticTools, sandbox: Sandbox) -> None:
    """basedpyright killed inside the sandbox: its client says it ended, the next call
    starts a new one that answers."""
    await tools.hover("main.py", 4, 7, None)
    old = tools.sessions["basedpyright"]
    killed = await sandbox.run(EACH_SERVER + 'kill -9 "${p#/proc/}"; done; true')
    assert killed.exit_code == 0
    for _ in range(100):
        if not old.client.alive:
            break
        await asyncio.sleep(0.1)
    assert not old.client.alive
    assert "ended (exit code" in str(old.client.failure)
    got = await tools.references("main.py", 4, 7, None)
    assert len(places(got.text)) == 4
    assert tools.sessions["basedpyright"] is not old


async def typescript_answers_and_rename(root: Path, sandbox: Sandbox) -> SemanticTools:
    """The TypeScript project (tests/semantic/test_semantic_ts_go.py) on ``sandbox``: answers
    and rename equal typescript-language-server's own. The tools, still running, for the
    caller's own checks; the caller closes them."""
    async with Oracle("typescript-language-server", root) as oracle:
        oracle.open("src/calc.ts")
        oracle.open("src/main.ts")
        want_refs = await oracle.references("src/calc.ts", 2, 17)
        want_def = await oracle.definition("src/main.ts", 3, 13)
        want_hover = await oracle.hover("src/main.ts", 3, 13)
        want_rename = await oracle.rename("src/calc.ts", 2, 17, "grandTotal")
    tools = SemanticTools(sandbox)
    refs = await tools.references(None, None, None, "computeTotal")
    assert places(refs.text) == want_refs
    assert len(want_refs) == 3
    assert places((await tools.definition("src/main.ts", 3, 13, None)).text) == want_def
    assert (await tools.hover("src/main.ts", 3, 13, None)).text == want_hover
    outline = await tools.symbols(None, "src/calc.ts")
    assert "2:17 function computeTotal" in outline.text
    renamed = await tools.rename(None, None, None, "computeTotal", "grandTotal")
    assert sorted(renamed.edits) == sorted(want_rename) == ["src/calc.ts", "src/main.ts"]
    for rel, text in want_rename.items():
        assert (root / rel).read_text() == text
    return tools


async def go_answers_and_rename(root: Path, sandbox: Sandbox) -> SemanticTools:
    """The Go project (tests/semantic/test_semantic_ts_go.py) on ``sandbox``: answers and
    rename equal gopls's own, and a rename gopls refuses writes nothing. The tools, still
    running; the caller closes them."""
    main = (root / "main.go").read_text()
    async with Oracle("gopls", root) as oracle:
        oracle.open("calc/calc.go")
        oracle.open("main.go")
        want_refs = await oracle.references("main.go", 10, 19)
        want_def = await oracle.definition("main.go", 10, 19)
        want_hover = await oracle.hover("main.go", 10, 19)
        want_rename = await oracle.rename("calc/calc.go", 4, 6, "GrandTotal")
    tools = SemanticTools(sandbox)
    refs = await tools.references(None, None, None, "ComputeTotal")
    assert places(refs.text) == want_refs
    assert {p for p, _, _ in want_refs} == {"calc/calc.go", "main.go"}
    assert places((await tools.definition("main.go", 10, 19, None)).text) == want_def
    assert (await tools.hover("main.go", 10, 19, None)).text == want_hover
    with pytest.raises(LanguageServerError, match="unexported"):
        await tools.rename("calc/calc.go", 4, 6, None, "grandTotal")
    assert (root / "main.go").read_text() == main  # a refused rename writes nothing
    renamed = await tools.rename("calc/calc.go", 4, 6, None, "GrandTotal")
    assert sorted(renamed.edits) == sorted(want_rename)
    for rel, text in want_rename.items():
        assert (root / rel).read_text() == text
    return tools
