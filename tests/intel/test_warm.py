"""Issue 19: the feed's incremental pytest runs in a warm process, with the cold results.

Every test builds a real virtualenv (pytest from this venv, linked in, plus a tiny plugin
installed as a distribution with a ``pytest11`` entry point), a generated project, a real
LocalSandbox and the real fork server; nothing is faked.
"""

from __future__ import annotations

import asyncio
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from driveros.diagnostics import DiagnosticsSnapshot
from driveros.intel import DiagnosticsFeed, IntelConfig
from driveros.intel._warm import UNAVAILABLE, interpreter_of, warm_parts
from driveros.sandbox import CommandResult, DockerSandbox, LocalSandbox
from tests.intel import _projects as P
from tests.intel.conftest import require_docker_image

_RUN = IntelConfig(disable=("ruff",), type_checker="off", pytest="run")
_SITE = Path(pytest.__file__).resolve().parent.parent
_LINKED = ("pytest", "_pytest", "pluggy", "iniconfig", "packaging", "py.py", "pygments")

_PLUGIN = """import pytest


@pytest.fixture
def plugged() -> int:
    return {value}
"""

_PROJECT = {
    "pyproject.toml": P.RUFF_CONFIG + '\n[tool.pytest.ini_options]\npythonpath = ["."]\n',
    "app/__init__.py": "",
    "app/core.py": "def value() -> int:\n    return 1\n",
    "tests/conftest.py": ("import pytest\n\n\n@pytest.fixture\ndef base() -> int:\n    return 2\n"),
    "tests/test_ok.py": (
        "from app.core import value\n\n\n"
        "def test_ok(base: int, plugged: int) -> None:\n"
        "    assert (value(), base, plugged) == (1, 2, 42)\n"
    ),
    "tests/test_fail.py": (
        "from app.core import value\n\n\ndef test_fail() -> None:\n    assert value() == 2\n"
    ),
    "tests/test_broken.py": (
        "from app.core import nothing_here\n\n\ndef test_x() -> None:\n    pass\n"
    ),
}


def make_venv(root: Path, plugins: Mapping[str, str], *, pth: tuple[Path, ...] = ()) -> Path:
    """A virtualenv with pytest (linked from this venv) and ``plugins`` (entry-point name ->
    module name) declared by one distribution; the bin directory."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    site = next(root.glob("lib/python*/site-packages"))
    for entry in _SITE.iterdir():
        if entry.name.split("-")[0] in _LINKED:
            (site / entry.name).symlink_to(entry)
    dist = site / "warmplug-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: warmplug\nVersion: 1.0\n")
    lines = "".join(f"{name} = {module}\n" for name, module in plugins.items())
    (dist / "entry_points.txt").write_text(f"[pytest11]\n{lines}")
    (dist / "RECORD").write_text("")
    if pth:
        (site / "warm_extra.pth").write_text("".join(f"{p}\n" for p in pth))
    script = root / "bin" / "pytest"
    script.write_text(
        f"#!{root / 'bin' / 'python'}\nimport sys\nimport pytest\n"
        "if __name__ == '__main__':\n    sys.exit(pytest.console_main())\n"
    )
    script.chmod(0o755)
    return root / "bin"


def _env(bin_dir: Path) -> dict[str, str]:
    env = P.tool_env()
    env.pop("PYTEST_DISABLE_PLUGIN_AUTOLOAD", None)  # the plugin must auto-load
    env["PATH"] = os.pathsep.join([str(bin_dir), env["PATH"]])
    return env


@asynccontextmanager
async def _project(
    tmp_path: Path, files: Mapping[str, str] = _PROJECT, *, value: int = 42
) -> AsyncIterator[tuple[LocalSandbox, Path]]:
    bin_dir = make_venv(tmp_path / "venv", {"warmplug": "warmplug"})
    site = next((tmp_path / "venv").glob("lib/python*/site-packages"))
    (site / "warmplug.py").write_text(_PLUGIN.format(value=value))
    root = P.write_project(tmp_path / "ws", files)
    async with LocalSandbox(root, base_env=_env(bin_dir)) as sandbox:
        yield sandbox, site


async def _ready(feed: DiagnosticsFeed) -> None:
    """Start the server as the first incremental snapshot would; wait (bounded) until it
    answers."""
    spec = next(c for c in feed.checks if c.name == "pytest")
    await feed._warm.start(spec, feed._probe.roots)
    assert await feed._warm.command(spec, "") is not None, feed._warm.disabled


def _masked(text: str) -> str:
    return re.sub(r"in \d+\.\d+s", "in Ns", text)


def _same(a: CommandResult, b: CommandResult) -> None:
    assert (a.exit_code, _masked(a.stdout), _masked(a.stderr)) == (
        b.exit_code,
        _masked(b.stdout),
        _masked(b.stderr),
    )


def _items(snap: DiagnosticsSnapshot) -> list[tuple[str, int, str | None, str]]:
    return [(i.path, i.line, i.code, i.message) for i in snap.items]


def _pytest_run(feed: DiagnosticsFeed) -> tuple[str, tuple[str, ...]]:
    run = next(r for r in feed.runs if r.name == "pytest")
    return run.mode, run.files


async def _touch(sandbox: LocalSandbox, path: str, n: int) -> None:
    text = await sandbox.read_file(path)
    await sandbox.write_file(path, text + f"\n# edit {n}\n")


async def test_warm_runs_give_the_cold_output_byte_for_byte(tmp_path: Path) -> None:
    async with _project(tmp_path) as (sandbox, _site):
        for mode in ("run", "collect"):
            feed = DiagnosticsFeed(sandbox, config=_RUN.model_copy(update={"pytest": mode}))
            await feed.snapshot()
            await _ready(feed)
            spec = next(c for c in feed.checks if c.name == "pytest")
            for selection in ("", "tests/test_ok.py", "tests/test_fail.py tests/test_broken.py"):
                warm = await feed._warm.command(spec, selection)
                assert warm is not None
                hot = await sandbox.run(warm)
                cold = await sandbox.run(f"{spec.command} {selection}")
                assert hot.exit_code != UNAVAILABLE
                _same(hot, cold)
            await feed.aclose()
        # the run mode output holds all four kinds: a failure, a collection error, the
        # conftest fixture and the plugin's fixture (test_ok passes only with both)
        assert "test_fail" in cold.stdout or "test_broken" in cold.stdout


async def test_incremental_snapshots_use_the_warm_process_with_cold_results(
    tmp_path: Path,
) -> None:
    # (a collection error interrupts a whole-suite run before any test runs: left out here)
    files = {k: v for k, v in _PROJECT.items() if k != "tests/test_broken.py"}
    async with _project(tmp_path, files) as (sandbox, _site):
        feed = DiagnosticsFeed(sandbox, config=_RUN)
        await feed.snapshot()
        assert not feed._warm.running  # a run that never edits never has one
        await _touch(sandbox, "tests/test_fail.py", 1)
        first = await feed.snapshot(changed=["tests/test_fail.py"])
        assert feed._warm.running  # started by the first incremental snapshot, which ran cold
        assert feed._warm.served_runs == 0
        await _touch(sandbox, "tests/test_fail.py", 2)
        warm = await feed.snapshot(changed=["tests/test_fail.py"])
        assert _pytest_run(feed) == ("files", ("tests/test_fail.py",))
        assert feed._warm.served_runs == 1
        assert _items(first) == _items(warm)
        cold = await DiagnosticsFeed(sandbox, config=_RUN).snapshot(full=True)
        assert _items(warm) == _items(cold)
        assert [i.code for i in warm.items] == ["test-failure"]
        # full=True is the cold baseline: never the warm process
        await feed.snapshot(full=True)
        assert feed._warm.served_runs == 1
        await feed.aclose()
        assert not feed._warm.running


async def test_a_killed_server_falls_back_to_cold_and_is_restarted(tmp_path: Path) -> None:
    async with _project(tmp_path) as (sandbox, _site):
        feed = DiagnosticsFeed(sandbox, config=_RUN)
        baseline = await feed.snapshot()
        await _ready(feed)
        first = feed._warm.pid
        assert first is not None
        # the pid is the sandbox's (its own PID namespace): killed from inside it
        await sandbox.run(f"kill -9 {first}")
        await _touch(sandbox, "tests/test_ok.py", 1)
        after = await feed.snapshot(changed=["tests/test_ok.py"])
        assert _items(after) == _items(baseline)  # answered, cold
        await _touch(sandbox, "tests/test_ok.py", 2)
        served = feed._warm.served_runs
        again = await feed.snapshot(changed=["tests/test_ok.py"])
        assert _items(again) == _items(baseline)
        assert feed._warm.served_runs == served + 1  # a new server answered
        assert feed._warm.pid not in (None, first)


async def test_a_plugin_importing_a_workspace_module_means_cold_runs(tmp_path: Path) -> None:
    files = {
        **_PROJECT,
        "wsplug.py": "import pytest\n\n\n@pytest.fixture\ndef ws() -> int:\n    return 7\n",
    }
    root = P.write_project(tmp_path / "ws", files)
    bin_dir = make_venv(
        tmp_path / "venv", {"warmplug": "warmplug", "wsplug": "wsplug"}, pth=(root,)
    )
    site = next((tmp_path / "venv").glob("lib/python*/site-packages"))
    (site / "warmplug.py").write_text(_PLUGIN.format(value=42))
    async with LocalSandbox(root, base_env=_env(bin_dir)) as sandbox:
        feed = DiagnosticsFeed(sandbox, config=_RUN)
        baseline = await feed.snapshot()
        spec = next(c for c in feed.checks if c.name == "pytest")
        await feed._warm.start(spec, feed._probe.roots)
        assert await feed._warm.command(spec, "") is None
        assert "wsplug" in (feed._warm.disabled or "")
        await _touch(sandbox, "tests/test_ok.py", 1)
        after = await feed.snapshot(changed=["tests/test_ok.py"])
        assert _items(after) == _items(baseline)
        assert feed._warm.served_runs == 0


async def test_a_plugin_writing_when_imported_means_cold_runs(tmp_path: Path) -> None:
    # every cold run prints it; a preloaded plugin would print it in no warm run
    bin_dir = make_venv(tmp_path / "venv", {"warmplug": "warmplug", "noisy": "noisy"})
    site = next((tmp_path / "venv").glob("lib/python*/site-packages"))
    (site / "warmplug.py").write_text(_PLUGIN.format(value=42))
    (site / "noisy.py").write_text("print('noisy plugin imported')\n")
    root = P.write_project(tmp_path / "ws", _PROJECT)
    async with LocalSandbox(root, base_env=_env(bin_dir)) as sandbox:
        feed = DiagnosticsFeed(sandbox, config=_RUN)
        await feed.snapshot()
        spec = next(c for c in feed.checks if c.name == "pytest")
        await feed._warm.start(spec, feed._probe.roots)
        assert await feed._warm.command(spec, "") is None
        assert "writes output" in (feed._warm.disabled or "")


async def test_a_changed_environment_restarts_the_server(tmp_path: Path) -> None:
    async with _project(tmp_path) as (sandbox, site):
        feed = DiagnosticsFeed(sandbox, config=_RUN)
        await feed.snapshot()
        await _ready(feed)
        first = feed._warm.pid
        # the plugin changes on disk: the preloaded copy is stale
        (site / "warmplug.py").write_text(_PLUGIN.format(value=43))
        await _touch(sandbox, "tests/test_ok.py", 1)
        after = await feed.snapshot(changed=["tests/test_ok.py"])
        failing = {i.message.split()[0] for i in after.items if i.code == "test-failure"}
        assert any("test_ok" in m for m in failing), after.items  # the new plugin ran
        await _touch(sandbox, "tests/test_ok.py", 2)
        served = feed._warm.served_runs
        again = await feed.snapshot(changed=["tests/test_ok.py"])
        assert _items(again) == _items(after)
        assert feed._warm.served_runs == served + 1
        assert feed._warm.pid not in (None, first)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:  # ended in between
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


async def _gone(pid: int) -> bool:
    for _ in range(300):  # a bound, not a timing assertion
        if not _alive(pid):
            return True
        await asyncio.sleep(0.1)
    return False


async def _gone_in(sandbox: LocalSandbox, pid: int) -> bool:
    """``pid`` as the sandbox numbers it (its own PID namespace) has ended or is a zombie."""
    probe = f"kill -0 {pid} 2>/dev/null && ! grep -q ') Z' /proc/{pid}/stat"
    for _ in range(300):  # a bound, not a timing assertion
        if not (await sandbox.run(probe)).ok:
            return True
        await asyncio.sleep(0.1)
    return False


async def test_a_timed_out_warm_run_kills_the_forked_test(tmp_path: Path) -> None:
    # inside the workspace (the sandbox writes nowhere else), where the scan does not look
    (tmp_path / "ws" / ".marks").mkdir(parents=True)
    marker = tmp_path / "ws" / ".marks" / "hang.pid"
    files = {
        **_PROJECT,
        "tests/test_hang.py": (
            "import os, pathlib, time\n\n\ndef test_hang() -> None:\n"
            f"    pathlib.Path({str(marker)!r}).write_text(str(os.getpid()))\n"
            "    time.sleep(1000)\n"
        ),
    }
    async with _project(tmp_path, files) as (sandbox, _site):
        feed = DiagnosticsFeed(sandbox, config=_RUN.model_copy(update={"pytest": "collect"}))
        await feed.snapshot()
        await _ready(feed)
        spec = next(c for c in feed.checks if c.name == "pytest")
        warm = await feed._warm.command(spec, "tests/test_hang.py")
        assert warm is not None
        res = await sandbox.run(warm.replace(" --co ", " "), timeout=5)  # run, not collect
        assert res.timed_out
        pid = int(marker.read_text())
        assert await _gone_in(sandbox, pid)
        assert feed._warm.running  # the server itself goes on
        # a canceled run (the snapshot's task canceled) ends its forked test the same way
        marker.unlink()
        task = asyncio.ensure_future(sandbox.run(warm.replace(" --co ", " "), timeout=300))
        for _ in range(300):
            if marker.exists() and marker.read_text():
                break
            await asyncio.sleep(0.1)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        assert await _gone_in(sandbox, int(marker.read_text()))
        assert feed._warm.pid is not None
        token = feed._warm.directory.rsplit("/", 1)[1]
    # the server ends with the sandbox, leaving nothing behind (seen from the host)
    for _ in range(300):  # a bound, not a timing assertion
        if not _with_token(token):
            break
        await asyncio.sleep(0.1)
    assert _with_token(token) == []


def _with_token(token: str) -> list[int]:
    """Live processes whose command line names ``token`` (the server and its forks do)."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            cmdline = (proc / "cmdline").read_bytes()
        except OSError:
            continue
        if proc.name.isdigit() and token.encode() in cmdline and _alive(int(proc.name)):
            found.append(int(proc.name))
    return found


async def test_the_server_refuses_what_it_does_not_serve(tmp_path: Path) -> None:
    async with _project(tmp_path) as (sandbox, _site):
        feed = DiagnosticsFeed(sandbox, config=_RUN)
        await feed.snapshot()
        await _ready(feed)
        spec = next(c for c in feed.checks if c.name == "pytest")
        warm = await feed._warm.command(spec, "tests/test_ok.py")
        assert warm is not None
        script = feed._warm._key[1] if feed._warm._key else ""
        # another environment than the server's: refused, nothing written
        other_env = await sandbox.run(warm, env={"PYTHONPATH": str(tmp_path)})
        assert (other_env.exit_code, other_env.stdout, other_env.stderr) == (UNAVAILABLE, "", "")
        # another program than the pytest script it was started for
        other = warm.replace(f" {shlex.quote(script)} ", " /bin/sh ", 1)
        assert other != warm
        refused = await sandbox.run(other + " -c 'echo pwned'")
        assert (refused.exit_code, refused.stdout) == (UNAVAILABLE, "")
        # garbage on the socket: the server drops it and goes on serving
        directory = feed._warm.directory
        garbage = await sandbox.run(
            f'cd "{directory}" && python3 -c "import socket; s = socket.socket(socket.AF_UNIX);'
            " s.connect('s'); s.sendall(b'\\xff' * 70000); s.close()\""
        )
        assert garbage.exit_code == 0, garbage.stderr
        served = await sandbox.run(warm)
        assert served.exit_code == 0 and "1 passed" in served.stdout
        assert feed._warm.running


def test_command_shapes() -> None:
    assert warm_parts("A=1 B=2 pytest -q --co") is not None
    assert warm_parts("-q") is None
    assert warm_parts("pytest 'unclosed") is None
    assert interpreter_of("#!/usr/bin/python3\n") == ("/usr/bin/python3", None)
    assert interpreter_of("#!/usr/bin/env python3\n") == (None, "python3")
    assert interpreter_of("#!/bin/sh\n'''exec' '/a b/python' \"$0\" \"$@\"\n' '''\n") == (
        "/a b/python",
        None,
    )
    assert interpreter_of("#!/bin/bash\necho hi\n") == (None, None)
    assert interpreter_of("#!/usr/bin/python3 -E\n") == (None, None)
    assert interpreter_of("\x7fELF") == (None, None)


@pytest.mark.docker
async def test_warm_run_in_the_docker_tier(tmp_path: Path) -> None:
    require_docker_image()
    root = P.write_project(tmp_path / "ws", _PROJECT)
    # a virtualenv inside the workspace, for the container's own python3: pytest and the
    # plugin copied in (pure Python), the interpreter as the image has it
    venv = root / ".venv"
    site = venv / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    for entry in _SITE.iterdir():
        if entry.name.split("-")[0] in _LINKED:
            copy = shutil.copytree if entry.is_dir() else shutil.copy2
            copy(entry, site / entry.name)
    (site / "warmplug.py").write_text(_PLUGIN.format(value=42))
    dist = site / "warmplug-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: warmplug\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[pytest11]\nwarmplug = warmplug\n")
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\ninclude-system-site-packages = false\n")
    (venv / "bin").mkdir()
    (venv / "bin" / "python").symlink_to("/usr/bin/python3")
    script = venv / "bin" / "pytest"
    script.write_text(
        "#!/workspace/.venv/bin/python\nimport sys\nimport pytest\n"
        "if __name__ == '__main__':\n    sys.exit(pytest.console_main())\n"
    )
    script.chmod(0o755)
    async with DockerSandbox(root) as sandbox:
        feed = DiagnosticsFeed(sandbox, config=_RUN)
        await feed.snapshot()
        spec = next(c for c in feed.checks if c.name == "pytest")
        await feed._warm.start(spec, feed._probe.roots)
        warm = await feed._warm.command(spec, "tests/test_ok.py tests/test_fail.py")
        assert warm is not None, feed._warm.disabled
        hot = await sandbox.run(warm)
        cold = await sandbox.run(f"{spec.command} tests/test_ok.py tests/test_fail.py")
        assert hot.exit_code == 1
        _same(hot, cold)
        await _touch(sandbox, "tests/test_fail.py", 1)
        served = feed._warm.served_runs
        await feed.snapshot(changed=["tests/test_fail.py"])
        assert feed._warm.served_runs == served + 1
