"""What the docker tier mounts for the language servers (no daemon needed): only the servers'
own files, read-only under /opt/driveros/lsp, never the state directory, the user's tree
under a view or the npm directory's own files; what `driveros doctor` says per tier."""

from __future__ import annotations

import shutil
from pathlib import Path, PurePosixPath

from tests.cli.test_doctor import as_json, check, doctor

from driveros.config import load_environment
from driveros.runs import RunSpec
from driveros.runs._sandbox import make_sandbox
from driveros.sandbox import DockerSandbox
from driveros.semantic import docker_server_mounts
from driveros.semantic._docker import BASEDPYRIGHT, BIN, GOROOT, NODE_MODULES, SERVERS_ROOT


def npm_cache(base: Path) -> Path:
    """A cache directory with the TypeScript server installed, and an .npmrc beside it."""
    npm = base / "driveros" / "lsp-servers"
    (npm / "node_modules/.bin").mkdir(parents=True)
    (npm / "node_modules/.bin/typescript-language-server").write_text("#!/usr/bin/env node\n")
    (npm / ".npmrc").write_text("//registry.npmjs.org/:_authToken=npm_SECRET\n")
    return npm


def test_semantic_docker_mounts_only_the_servers_read_only_under_one_root(
    tmp_path: Path,
) -> None:
    npm = npm_cache(tmp_path / "cache")
    mounts = docker_server_mounts(
        {"PATH": "/usr/bin:/bin", "XDG_CACHE_HOME": str(tmp_path / "cache")}
    )
    targets = {PurePosixPath(t): Path(s) for s, t in mounts.items()}
    assert all(SERVERS_ROOT in t.parents for t in targets), targets
    assert targets[NODE_MODULES] == (npm / "node_modules").resolve()
    assert all(not s.is_relative_to(npm) or s.name == "node_modules" for s in targets.values())
    if BASEDPYRIGHT in targets:
        assert (targets[BASEDPYRIGHT] / "langserver.index.js").exists()
    assert BIN / "node" in targets  # the TypeScript server needs one
    if shutil.which("gopls", path="/usr/bin:/bin") and shutil.which("go", path="/usr/bin:/bin"):
        assert {BIN / "gopls", GOROOT / "bin", GOROOT / "src", GOROOT / "pkg"} <= set(targets)
    home = Path.home().resolve()
    assert home not in targets.values() and Path("/") not in targets.values()


def test_semantic_docker_mounts_nothing_inside_a_hidden_tree(tmp_path: Path) -> None:
    npm_cache(tmp_path / "cache")
    environ = {"PATH": "/usr/bin:/bin", "XDG_CACHE_HOME": str(tmp_path / "cache")}
    everything = docker_server_mounts(environ)
    hidden = docker_server_mounts(environ, hidden=[tmp_path, *map(Path, everything)])
    assert hidden == {}


def test_semantic_docker_run_never_mounts_the_state_directory(tmp_path: Path) -> None:
    """A run's docker sandbox gets the servers, unless they lie in the state directory."""
    ws = tmp_path / "ws"
    ws.mkdir()
    state = tmp_path / "state"
    npm_cache(state / "cache")
    environ = {
        "PATH": "/usr/bin:/bin",
        "DRIVEROS_STATE_DIR": str(state),
        "XDG_CACHE_HOME": str(state / "cache"),
    }
    env = load_environment(cwd=ws, environ=environ)
    box, seen_as = make_sandbox(RunSpec(task="t", workspace=ws, sandbox="docker"), ws, env)
    assert isinstance(box, DockerSandbox) and seen_as == "/workspace"
    sources = [Path(s) for s in box._mounts]
    assert sources, "the servers found on the host are mounted"
    assert all(not s.is_relative_to(state) for s in sources), sources
    assert str(NODE_MODULES) not in box._mounts.values()
    elsewhere = {**environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    npm_cache(tmp_path / "cache")
    env = load_environment(cwd=ws, environ=elsewhere)
    box, _ = make_sandbox(RunSpec(task="t", workspace=ws, sandbox="docker"), ws, env)
    assert str(NODE_MODULES) in box._mounts.values()


def test_semantic_doctor_says_per_tier_what_is_available(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    report = as_json(
        doctor(ws, "--format", "json", PATH="/usr/bin:/bin", XDG_CACHE_HOME=str(tmp_path / "c"))
    )
    ts = check(report, "build", "language server typescript-language-server (docker)")
    assert ts["status"] == "warning", ts
    assert "node_modules" in ts["detail"] and "npm install typescript-language-server" in ts["fix"]
    servers = {f["server"]: f for f in report["facts"]["build"]["language_servers"]}
    assert servers["typescript-language-server"]["docker"] is False
    if shutil.which("gopls", path="/usr/bin:/bin") and shutil.which("go", path="/usr/bin:/bin"):
        gopls = check(report, "build", "language server gopls (docker)")
        assert gopls["status"] == "ok" and "mounted read-only from" in gopls["detail"]
        assert servers["gopls"]["docker"] is True
