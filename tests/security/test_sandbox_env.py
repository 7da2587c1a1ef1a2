"""Row 4 of issue 13: nothing from a repository's ``.env`` reaches a command.

The hostile repository's ``.env`` sets ``GIT_CONFIG_GLOBAL`` to a planted config whose
``core.fsmonitor`` runs a script, plus ``LD_PRELOAD``, ``BASH_ENV``, ``PATH`` and ripgrep's
config. The sandbox is handed the environment the way a careless caller would build it (the
``.env`` merged under the real environment); ``git status`` then runs through the local and
docker tiers, the diagnostics feed and a shell session, ripgrep runs host-side for ``search``,
and driveros' own host git runs on the repository: no planted program may run.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from driveros._git import GitRepo, git_environment, run_git
from driveros.intel import CheckSpec, DiagnosticsFeed, IntelConfig
from driveros.sandbox import DockerSandbox, LocalSandbox, Sandbox
from tests.sandbox.conftest import SANDBOX_UID, require_docker

PLANTED = {
    "GIT_CONFIG_GLOBAL": "evil.gitconfig",
    "GIT_CONFIG_COUNT": "1",
    "GIT_CONFIG_KEY_0": "core.fsmonitor",
    "GIT_CONFIG_VALUE_0": "./fsmonitor.sh",
    "LD_PRELOAD": "./evil.so",
    "BASH_ENV": "./evil.sh",
    "ENV": "./evil.sh",
    "XDG_CONFIG_HOME": "cfg",
    "RIPGREP_CONFIG_PATH": "rgrc",
    "PYTHONSTARTUP": "evil.py",
    "NODE_OPTIONS": "--require ./evil.js",
    "GOFLAGS": "-toolexec=./fsmonitor.sh",
}
MARKERS = ("pwned-fsmonitor", "pwned-rg", "pwned-sh")


def hostile_repo(base: Path) -> Path:
    repo = base / "repo"
    repo.mkdir(parents=True)
    env = {"PATH": os.environ["PATH"], "HOME": str(base)}

    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, env=env)

    git("init", "-q")
    (repo / "app.py").write_text("print('hi')\n")
    git("add", "-A")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init")
    (repo / "fsmonitor.sh").write_text('#!/bin/sh\ntouch pwned-fsmonitor\necho "{}"\n')
    (repo / "fsmonitor.sh").chmod(0o755)
    (repo / "evil.gitconfig").write_text("[core]\n\tfsmonitor = ./fsmonitor.sh\n")
    (repo / "evil.sh").write_text("touch pwned-sh\n")
    (repo / "rgrc").write_text("--pre=./rg-pre.sh\n")
    (repo / "rg-pre.sh").write_text('#!/bin/sh\ntouch pwned-rg\ncat "$1"\n')
    (repo / "rg-pre.sh").chmod(0o755)
    (repo / "bin").mkdir()
    for tool in ("git", "rg", "sh"):
        (repo / "bin" / tool).write_text("#!/bin/sh\ntouch pwned-sh\n")
        (repo / "bin" / tool).chmod(0o755)
    planted = {**PLANTED, "PATH": f"{repo}/bin:bin:.:{os.environ['PATH']}"}
    (repo / ".env").write_text("".join(f"{k}={v}\n" for k, v in planted.items()))
    return repo


def handed_env(repo: Path) -> dict[str, str]:
    """What a caller that merged the repository's .env would hand the sandbox."""
    return {
        **PLANTED,
        "PATH": f"{repo}/bin:bin:.:{os.environ['PATH']}",
        "HOME": str(repo),
        "LANG": "C.UTF-8",
    }


def assert_no_marker(repo: Path) -> None:
    found = [m for m in MARKERS if (repo / m).exists()]
    assert not found, f"planted code ran: {found}"


async def exercise(sandbox: Sandbox, repo: Path) -> None:
    result = await sandbox.run("git status --porcelain && env")
    assert result.exit_code == 0, result
    lines = result.stdout.splitlines()
    for name, value in PLANTED.items():
        if not name.startswith("GIT_CONFIG_") or name == "GIT_CONFIG_GLOBAL":
            # (the sandbox sets its own GIT_CONFIG_COUNT/KEY_n/VALUE_n: core.fsmonitor=false...)
            assert f"{name}={value}" not in lines, name
    assert "GIT_CONFIG_VALUE_0=false" in lines
    assert "/bin:bin:" not in result.stdout  # no relative PATH entries
    assert f"HOME={repo}" not in result.stdout
    feed = DiagnosticsFeed(
        sandbox,
        config=IntelConfig(
            auto=False, checks=(CheckSpec(name="git", command="git status --porcelain"),)
        ),
    )
    await feed.snapshot()
    assert [run.name for run in feed.runs] == ["git"]
    session = await sandbox.open_session()
    assert (await session.run("git status")).exit_code == 0
    await sandbox.search("print")
    assert_no_marker(repo)


async def test_sandbox_env_local(tmp_path: Path) -> None:
    repo = hostile_repo(tmp_path)
    async with LocalSandbox(repo, base_env=handed_env(repo)) as sandbox:
        home = (await sandbox.run("echo $HOME; echo $TMPDIR")).stdout.split()
        assert all(not Path(p).is_relative_to(repo) and Path(p).is_dir() for p in home)
        await exercise(sandbox, repo)
    assert_no_marker(repo)


async def test_sandbox_env_host_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = hostile_repo(tmp_path)
    monkeypatch.chdir(repo)  # relative planted paths resolve in the repository
    for name, value in PLANTED.items():
        monkeypatch.setenv(name, value)
    # the repository's own config too (a copied directory can carry one)
    with (repo / ".git" / "config").open("a") as cfg:
        cfg.write("[core]\n\tfsmonitor = ./fsmonitor.sh\n")
    # the one runner: driveros' own calls on the user's repository and on its scratch copies
    # (the review layer's; before the merge those inherited the planted environment)
    for scratch in (False, True):
        await run_git(["status", "--porcelain"], cwd=repo, repo=GitRepo(scratch=scratch))
        await run_git(["rev-parse", "--show-toplevel"], cwd=repo, repo=GitRepo(scratch=scratch))
    assert_no_marker(repo)


@pytest.mark.docker
async def test_sandbox_env_docker(tmp_path: Path) -> None:
    require_docker()
    repo = hostile_repo(tmp_path)
    if os.geteuid() == 0:
        for path in [repo, *repo.rglob("*")]:
            os.chown(path, SANDBOX_UID, SANDBOX_UID, follow_symlinks=False)
    async with DockerSandbox(repo, base_env=handed_env(repo)) as sandbox:
        assert (await sandbox.run("echo $HOME")).stdout.strip() == "/tmp"
        await exercise(sandbox, repo)
    assert_no_marker(repo)


async def test_sandbox_env_is_an_allowlist(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / ".env").write_text("JAVA_HOME=/opt/from-dotenv\nTZ=Planted/Zone\n")
    (tmp_path / "home" / ".rustup").mkdir(parents=True)
    given = {
        "PATH": f"/usr/bin::.:bin:{ws}/.venv/bin:/bin",
        "HOME": str(tmp_path / "home"),
        "LANG": "C.UTF-8",
        "LC_CTYPE": "C.UTF-8",
        "TZ": "Planted/Zone",  # same value as the .env: dropped
        "JAVA_HOME": "/opt/from-dotenv",  # same value as the .env: dropped
        "GOROOT": str(ws / "go"),  # a toolchain inside the workspace: dropped
        "GOPATH": "relative/go",  # not absolute: dropped
        "VIRTUAL_ENV": str(ws / ".venv"),  # the workspace's venv: kept
        "CI": "true",
        "GIT_AUTHOR_NAME": "Ada",
        "OPENAI_API_KEY": "sk-x",
        "AWS_SECRET_ACCESS_KEY": "x",
        "SSH_AUTH_SOCK": "/tmp/agent",
        "PYTHONPATH": "evil",
        "XDG_CONFIG_HOME": "cfg",
        "BASH_ENV": "x",
        "LD_LIBRARY_PATH": "x",
        "DYLD_INSERT_LIBRARIES": "x",
        "NODE_OPTIONS": "x",
        "PERL5OPT": "x",
        "RUBYOPT": "x",
        "JAVA_TOOL_OPTIONS": "x",
        "GIT_SSH_COMMAND": "x",
        "GIT_EXEC_PATH": "x",
        "EDITOR": "x",
        "PAGER": "less",
        "PROMPT_COMMAND": "x",
    }
    async with LocalSandbox(ws, base_env=given) as sandbox:
        await sandbox.start()
        env = sandbox.env
    assert env["PATH"] == f"/usr/bin:{ws}/.venv/bin:/bin"
    assert env["RUSTUP_HOME"] == str(tmp_path / "home" / ".rustup")
    assert env["HOME"] != given["HOME"] and env["TMPDIR"].startswith(str(Path(env["HOME"]).parent))
    taken = {"LANG", "LC_CTYPE", "VIRTUAL_ENV", "CI", "GIT_AUTHOR_NAME"}
    assert {k: env[k] for k in taken} == {k: given[k] for k in taken}
    forced = {"TERM", "PAGER", "GIT_PAGER", "GIT_TERMINAL_PROMPT", "NO_COLOR", "DEBIAN_FRONTEND"}
    forced |= {"PYTHONDONTWRITEBYTECODE", "HOME", "TMPDIR", "RUSTUP_HOME", "PATH"}
    # the git pins (docs/security.md, "Allowlisted commands that read outside the workspace or
    # run planted code"): GIT_CONFIG_COUNT and as many keys and values
    pins = int(env["GIT_CONFIG_COUNT"])
    forced |= {"GIT_CONFIG_COUNT", "GIT_OPTIONAL_LOCKS"}
    forced |= {f"GIT_CONFIG_{kind}_{n}" for kind in ("KEY", "VALUE") for n in range(pins)}
    assert env["GIT_CONFIG_KEY_0"] == "core.fsmonitor" and env["GIT_CONFIG_VALUE_0"] == "false"
    assert set(env) == taken | forced
    assert env["PAGER"] == "cat"


def test_sandbox_env_host_git_environment() -> None:
    env = git_environment(
        {
            "PATH": "/usr/bin",
            "GIT_INDEX_FILE": "/repo/.git/next-index-1.lock",  # set by git for a hook
            "GIT_DIR": "/repo/.git",
            "GIT_CONFIG_GLOBAL": "evil.gitconfig",
            "GIT_CONFIG_COUNT": "1",
            "GIT_CONFIG_KEY_0": "core.fsmonitor",
            "GIT_EXEC_PATH": "/tmp/evil",
            "GIT_SSH_COMMAND": "evil",
            "LD_PRELOAD": "evil.so",
            "BASH_ENV": "evil.sh",
            "XDG_CONFIG_HOME": "cfg",
        }
    )
    assert env == {
        "PATH": "/usr/bin",
        "GIT_INDEX_FILE": "/repo/.git/next-index-1.lock",
        "GIT_DIR": "/repo/.git",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_OPTIONAL_LOCKS": "0",
    }
