"""The semantic tools in the docker tier: the host's servers bound read-only into the run's
container answer exactly what the same servers answer when asked directly (Python,
TypeScript, Go; runc and gVisor), a rename through a docker `--review` run proposes exactly the
server's edit, a container without the mounts says what is missing, and no server outlives
the tools or the sandbox (docs/semantic.md, "Tiers")."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Literal

import pytest
import pytest_asyncio
from tests._scripted import calc_repo as calc_repo  # the fixture, for these tests
from tests.acp._client import Schema, install_sdk, start_agent
from tests.acp.conftest import acp_environ
from tests.cli.conftest import run_cli
from tests.runs.conftest import run_scripted
from tests.sandbox.conftest import daemon_runtimes, require_docker
from tests.semantic._checks import (
    a_crashed_server_is_restarted,
    answers_follow_the_agents_edits,
    cancellation_keeps_the_server,
    cancelled_before_dispatch_keeps_answering,
    go_answers_and_rename,
    typescript_answers_and_rename,
)
from tests.semantic._oracle import Oracle, places, program
from tests.semantic.test_semantic_python import make_project
from tests.semantic.test_semantic_run import TURNS, proposed_rename, server_rename
from tests.semantic.test_semantic_run import project as rename_project
from tests.semantic.test_semantic_ts_go import go_project, ts_project

from driveros.agent._tools import ToolBox
from driveros.sandbox import DockerSandbox
from driveros.semantic import LanguageServerError, SemanticTools, docker_server_mounts
from driveros.semantic._docker import BASEDPYRIGHT, BIN, NODE_MODULES, SERVERS_ROOT
from driveros.testing import ScriptedModelServer, ToolCallSpec, Turn

pytestmark = [pytest.mark.docker, pytest.mark.asyncio(loop_scope="module")]


def docker_box(root: Path, runtime: Literal["runc", "runsc"] = "runc") -> DockerSandbox:
    return DockerSandbox(root, runtime=runtime, extra_mounts=docker_server_mounts())


def container_processes(sandbox: DockerSandbox) -> list[str]:
    """The command lines running in the sandbox's container, as the daemon lists them."""
    import docker

    client = docker.from_env()
    try:
        assert sandbox.container_id is not None
        top = client.api.top(sandbox.container_id, ps_args="-eo pid,args")
    finally:
        client.close()
    return [row[-1] for row in top.get("Processes") or []]


def owned_processes(owner: int) -> list[str]:
    """The command lines running in the containers a driveros process started."""
    import docker

    client = docker.from_env()
    try:
        found = []
        for c in client.api.containers(filters={"label": f"driveros.owner.pid={owner}"}):
            top = client.api.top(c["Id"], ps_args="-eo pid,args")
            found += [row[-1] for row in top.get("Processes") or []]
        return found
    finally:
        client.close()


def container_exists(cid: str) -> bool:
    import docker
    from docker.errors import NotFound

    client = docker.from_env()
    try:
        client.api.inspect_container(cid)
    except NotFound:
        return False
    finally:
        client.close()
    return True


class Setup:
    def __init__(self, root: Path, tools: SemanticTools, sandbox: DockerSandbox) -> None:
        self.root, self.tools, self.sandbox = root, tools, sandbox


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def py(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Setup]:
    require_docker()
    program("basedpyright")
    root = make_project(tmp_path_factory.mktemp("dpy") / "ws")
    async with docker_box(root) as sandbox:
        tools = SemanticTools(sandbox)
        yield Setup(root, tools, sandbox)
        await tools.aclose()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def oracle(py: Setup) -> AsyncIterator[Oracle]:
    async with Oracle("basedpyright", py.root) as found:
        for rel in ("main.py", "pkg/calc.py", "pkg/other.py"):
            found.open(rel)
        yield found


async def test_semantic_docker_python_answers_equal_the_servers_own(
    py: Setup, oracle: Oracle
) -> None:
    got = await py.tools.references("main.py", 4, 7, None)
    assert places(got.text) == await oracle.references("main.py", 4, 7)
    assert got.text.startswith("4 references to compute_total in 2 files")
    definition = await py.tools.definition("main.py", 4, 7, None)
    assert (
        places(definition.text)
        == await oracle.definition("main.py", 4, 7)
        == [("pkg/calc.py", 1, 5)]
    )
    hover = await py.tools.hover("main.py", 4, 7, None)
    assert hover.text == await oracle.hover("main.py", 4, 7)
    assert "Sum the items." in hover.text
    method = await py.tools.references(None, None, None, "Cart.total")
    assert places(method.text) == await oracle.references("pkg/calc.py", 11, 9)
    found = await py.tools.symbols("Cart", None)
    assert "pkg/calc.py:10:7: class Cart" in found.text
    outline = await py.tools.symbols(None, "pkg/calc.py")
    assert "1:5 function compute_total" in outline.text
    with pytest.raises(LanguageServerError, match="'helper' is ambiguous: 2 symbols"):
        await py.tools.definition(None, None, None, "helper")


async def test_semantic_docker_server_runs_in_the_container_on_its_view(py: Setup) -> None:
    """The server is the container's process, started from the read-only mount, on
    /workspace, with the container's environment (no host variable leaks in)."""
    await py.tools.references("main.py", 4, 7, None)
    running = container_processes(py.sandbox)
    assert any(str(BASEDPYRIGHT / "langserver.index.js") in args for args in running), running
    (session,) = py.tools.sessions.values()
    assert session.root == "/workspace"
    probe = await py.sandbox.run(f"touch {BASEDPYRIGHT}/x 2>&1; echo $?; ls {SERVERS_ROOT}")
    assert "Read-only file system" in probe.stdout
    assert set(probe.stdout.split()[-3:]) <= {"basedpyright", "bin", "go", "npm"}


async def test_semantic_docker_answers_follow_the_agents_edits(py: Setup) -> None:
    """Edits made host-side through the fence reach the container's server (document sync)."""
    await answers_follow_the_agents_edits(py.tools, py.sandbox, py.root)


async def test_semantic_docker_cancellation_keeps_the_server(py: Setup) -> None:
    await cancellation_keeps_the_server(py.tools)


async def test_semantic_docker_requests_cancelled_before_dispatch_keep_it_answering(
    py: Setup,
) -> None:
    await cancelled_before_dispatch_keeps_answering(py.tools)


async def test_semantic_docker_frames_written_at_once_arrive_whole(py: Setup) -> None:
    """Frames written at once (the feed's document sync beside a tool's request, or a write
    whose caller was cancelled going on) reach the container's server one after the other,
    never interleaved on docker's exec socket: the same server answers after them."""
    await py.tools.hover("main.py", 4, 7, None)
    session = py.tools.sessions["basedpyright"]
    noise = {"text": "x" * (4 << 20)}  # larger than the socket's buffers
    await asyncio.gather(*(session.client.notify("$/driveros/noise", noise) for _ in range(3)))
    got = await py.tools.references("main.py", 4, 7, None)
    assert len(places(got.text)) == 4
    assert py.tools.sessions["basedpyright"] is session and session.client.alive


async def test_semantic_docker_a_crashed_server_is_restarted(py: Setup) -> None:
    await a_crashed_server_is_restarted(py.tools, py.sandbox)


async def test_semantic_docker_server_gets_the_containers_environment(tmp_path: Path) -> None:
    """The server's environment is the container's allowlisted one (no key, nothing from a
    .env) plus its PATH and Go toolchain variables."""
    require_docker()
    program("basedpyright")
    root = make_project(tmp_path / "ws")
    (root / ".env").write_text("DOTENV_TOKEN=from-the-workspace\n")
    host = {"PATH": "/usr/bin:/bin", "OPENAI_API_KEY": "sk-" + "x" * 40, "LANG": "C.UTF-8"}
    async with DockerSandbox(root, base_env=host, extra_mounts=docker_server_mounts()) as box:
        tools = SemanticTools(box)
        await tools.hover("main.py", 4, 7, None)
        shown = await box.run(
            "for p in $(pgrep -f '^node /opt/driveros/lsp/'); do "
            "tr '\\0' '\\n' < /proc/$p/environ; done"
        )
        await tools.aclose()
    env = dict(line.split("=", 1) for line in shown.stdout.splitlines() if "=" in line)
    assert env["PATH"].startswith(f"{BIN}:{SERVERS_ROOT}/go/bin:"), env
    assert env["GOTOOLCHAIN"] == "local" and env["HOME"] == "/tmp"
    assert "OPENAI_API_KEY" not in env and "DOTENV_TOKEN" not in env
    assert "sk-" not in shown.stdout and "from-the-workspace" not in shown.stdout


async def test_semantic_docker_python_rename_equals_the_servers(tmp_path: Path) -> None:
    require_docker()
    program("basedpyright")
    root = rename_project(tmp_path / "ws")
    want = await server_rename(root)
    async with docker_box(root) as sandbox:
        tools = SemanticTools(sandbox)
        renamed = await tools.rename("pkg/calc.py", 1, 5, None, "grand_total")
        assert sorted(renamed.edits) == sorted(want)
        for rel, text in want.items():
            assert (root / rel).read_text() == text
        await tools.aclose()


async def test_semantic_docker_typescript_answers_and_rename(tmp_path: Path) -> None:
    require_docker()
    program("typescript-language-server")
    root = ts_project(tmp_path / "ts")
    async with docker_box(root) as sandbox:
        tools = await typescript_answers_and_rename(root, sandbox)
        running = container_processes(sandbox)
        assert any(str(NODE_MODULES) in args for args in running), running
        await tools.aclose()


async def test_semantic_docker_go_answers_and_rename(tmp_path: Path) -> None:
    require_docker()
    program("gopls")
    root = go_project(tmp_path / "go")
    async with docker_box(root) as sandbox:
        tools = await go_answers_and_rename(root, sandbox)
        await tools.aclose()


async def test_semantic_docker_gvisor_answers_equal_the_servers_own(tmp_path: Path) -> None:
    require_docker()
    program("basedpyright")
    if "runsc" not in daemon_runtimes():
        pytest.skip("the Docker daemon has no runsc (gVisor) runtime")
    root = make_project(tmp_path / "ws")
    async with Oracle("basedpyright", root) as oracle:
        for rel in ("main.py", "pkg/calc.py", "pkg/other.py"):
            oracle.open(rel)
        want = await oracle.references("main.py", 4, 7)
        want_hover = await oracle.hover("main.py", 4, 7)
    async with docker_box(root, runtime="runsc") as sandbox:
        assert sandbox.tier == "docker-runsc"
        tools = SemanticTools(sandbox)
        assert places((await tools.references("main.py", 4, 7, None)).text) == want
        assert (await tools.hover("main.py", 4, 7, None)).text == want_hover
        await tools.aclose()


async def test_semantic_docker_nothing_keeps_running(tmp_path: Path) -> None:
    """The tools' close ends every server in the container; the sandbox's close ends the
    container, with a server still warm in it."""
    require_docker()
    program("basedpyright")
    program("gopls")
    root = make_project(tmp_path / "ws")
    go_project(root / "gomod")
    async with docker_box(root) as sandbox:
        box = ToolBox(sandbox)
        assert (await box.call("references", {"path": "main.py", "line": 4, "column": 7}, None)).ok
        assert (await box.call("symbols", {"path": "gomod/main.go"}, None)).ok
        running = container_processes(sandbox)
        assert any(str(BIN / "gopls") in a for a in running), running
        await box.aclose()
        for _ in range(50):
            left = [a for a in container_processes(sandbox) if str(SERVERS_ROOT) in a]
            if not left:
                break
            await asyncio.sleep(0.1)
        assert left == []
        assert (await box.call("hover", {"path": "main.py", "line": 4, "column": 7}, None)).ok
        cid = sandbox.container_id
        assert cid is not None
    assert not container_exists(cid)


async def test_semantic_docker_says_the_server_is_missing(tmp_path: Path) -> None:
    """Without the mounts (a bare DockerSandbox) the tools say what is missing; the run goes
    on."""
    require_docker()
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.py").write_text("def f():\n    return 1\n")
    async with DockerSandbox(ws) as sandbox:
        box = ToolBox(sandbox)
        outcome = await box.call("references", {"path": "a.py", "line": 1, "column": 5}, None)
        assert not outcome.ok
        assert "basedpyright (`basedpyright-langserver`) is not installed where the docker" in (
            outcome.output
        )
        assert "pip install basedpyright" in outcome.output
        assert "binds the host's installed servers read-only" in outcome.output
        again = await box.call("read_file", {"path": "a.py"}, None)
        assert again.ok
        await box.aclose()


async def test_semantic_docker_rename_in_a_review_run_proposes_the_servers_edit(
    tmp_path: Path,
) -> None:
    """execute_run (the language server's and ACP's path) on the docker tier: the proposal
    is exactly the server's rename and the feed finds the build still clean."""
    require_docker()
    program("basedpyright")
    root = rename_project(tmp_path / "ws")
    want = await server_rename(root)
    out = await run_scripted(
        TURNS, root, review=True, diagnostics=True, task="rename", sandbox="docker"
    )
    async with proposed_rename(out, root, want):
        (started,) = out.of("run_started")
        assert started.sandbox.startswith("docker"), started


async def test_semantic_docker_rename_through_the_cli_review(tmp_path: Path) -> None:
    """`driveros agent --sandbox docker --review`: the kept proposal is exactly the server's
    rename, and the references after it come from the container's server."""
    require_docker()
    program("basedpyright")
    root = rename_project(tmp_path / "ws")
    want = await server_rename(root)
    async with ScriptedModelServer(TURNS) as server:
        run = await run_cli(
            "--task",
            "rename",
            "--sandbox",
            "docker",
            "--review",
            "--review-action",
            "keep",
            "--format",
            "ndjson",
            server=server,
            cwd=root,
        )
    assert run.code == 0, run.stderr
    events = [json.loads(line) for line in run.stdout.splitlines() if line.strip()]
    (started,) = [e for e in events if e["type"] == "run_started"]
    assert started["sandbox"].startswith("docker"), started
    assert events[-1]["outcome"] == "answered"
    results = [e for e in events if e["type"] == "tool_result"]
    assert [r["name"] for r in results] == ["rename", "references"]
    assert all(r["ok"] for r in results), results
    assert results[1]["output"].startswith("5 references to grand_total in 3 files")
    for rel, text in want.items():
        assert (root / rel).read_text() == text


@pytest.mark.e2e
async def test_semantic_docker_references_through_acp(calc_repo: Path) -> None:
    """`driveros acp --sandbox docker`: the answer comes from the container's server and its
    places are the update's locations, as on the local tier."""
    require_docker()
    program("basedpyright")
    (calc_repo / "use.py").write_text("from calc import add\n\nprint(add(1, 2))\n")
    schema = Schema(install_sdk() / "schema" / "v1" / "schema.json")
    turns = [
        Turn(tool_calls=[ToolCallSpec("references", {"symbol": "add"})]),
        Turn(text="add is used in use.py.", delay_s=1),
    ]
    async with ScriptedModelServer(turns) as server:
        client = await start_agent(
            schema, env=acp_environ(server), cwd=calc_repo, args=("--sandbox", "docker")
        )
        await client.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        new = await client.request("session/new", {"cwd": str(calc_repo), "mcpServers": []})
        prompt = asyncio.ensure_future(
            client.request(
                "session/prompt",
                {
                    "sessionId": new["sessionId"],
                    "prompt": [{"type": "text", "text": "who uses add"}],
                },
            )
        )
        async with asyncio.timeout(120):
            while len(server.requests) < 2:  # the references answered: the server is warm
                await asyncio.sleep(0.05)
        running = owned_processes(client.proc.pid)
        result = await prompt
        assert await client.close() == 0
    assert any(str(BASEDPYRIGHT) in a for a in running), running
    assert client.errors == []
    assert result == {"stopReason": "end_turn"}
    (done,) = [
        u
        for u in client.updates
        if u["sessionUpdate"] == "tool_call_update" and u.get("status") == "completed"
    ]
    assert [(loc["path"], loc["line"]) for loc in done["locations"]] == [
        (str(calc_repo / "calc.py"), 1),
        (str(calc_repo / "test_calc.py"), 1),
        (str(calc_repo / "test_calc.py"), 5),
        (str(calc_repo / "use.py"), 1),
        (str(calc_repo / "use.py"), 3),
    ]
