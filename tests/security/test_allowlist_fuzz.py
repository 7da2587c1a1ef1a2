"""Issue 13 row 8, the proof: hostile commands built from the allowlisted programs; every one
the classifier allows is run for real under ``dash -c`` with strace, and may neither open a
path outside the workspace (system files the programs need aside) nor execute a program
other than the ones it names."""

from __future__ import annotations

import asyncio
import os
import subprocess
from collections.abc import Sequence
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from driveros.approval import ApprovalRequest, Decision, FolderAccess, PolicyApproval, Tier

from ._trace import outside, require_tracer, trace_command

PROGRAMS = [
    "cat",
    "head",
    "tail",
    "wc",
    "ls",
    "grep",
    "rg",
    "find",
    "stat",
    "file",
    "echo",
    "git status",
    "git log",
    "git diff",
    "git show",
    "git branch",
]
#: Arguments an attacker would try: globs that reach `..`, paths out, attached and
#: abbreviated options naming files, planted option-looking names, plain good ones.
ATOMS = [
    ".?",
    ".?/.?/outside/secret.txt",
    "./.?/.?/outside/secret.txt",
    "[.][.]/outside/*",
    ".*",
    "*",
    "./*",
    "sub/*",
    "*/*",
    "?",
    "[a-z]*",
    "'*'",
    "'.?'",
    "..",
    "../outside/secret.txt",
    "/etc/hostname",
    "/etc/host*",
    "~",
    "~/x",
    "-e.",
    "-e",
    "-f",
    "-f../outside/secret.txt",
    "-f/etc/hostname",
    "--regexp=.",
    "--reg",
    "--file=../outside/secret.txt",
    "--fil=/etc/hostname",
    "--pre=./planted.sh",
    "--pr=./planted.sh",
    "-m/etc/hostname",
    "-C",
    "--files0-from=names.txt",
    "-files0-from",
    "names.txt",
    "-r",
    "-n",
    "-l",
    "-a",
    "--",
    "-",
    "x",
    "a.txt",
    "src",
    "sub",
    "HEAD",
    "--output=../outside/o",
    "--ext-diff",
    "-exec",
    "./planted.sh",
    ";",
    "link",
    "link/secret.txt",
    "./*/secret.txt",
    "./*/*",
    "-R",
    "-L",
    "--follow",
    "-follow",
]
PREFIXES = [
    "",
    "HOME=. ",
    "XDG_CONFIG_HOME=cfg ",
    "RIPGREP_CONFIG_PATH=rgrc ",
    "GIT_DIR=../outside ",
    "LD_PRELOAD=./x.so ",
    "NO_COLOR=1 ",
    "CI=1 ",
    "LANG=C ",
    "PYTHONPATH=src ",
    "cd sub && ",
    "cd src; ",
]
SUFFIXES = ["", " < a.txt", " < ../outside/secret.txt", " 2>&1", " | head -n 3", " >/dev/null"]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    require_tracer()
    base = tmp_path_factory.mktemp("fuzz")
    ws, out, home = base / "ws", base / "outside", base / "home"
    for d in (ws / "src", ws / "sub", out, home, ws / "cfg" / "git"):
        d.mkdir(parents=True)
    (out / "secret.txt").write_text("outside secret\n")
    files = {
        "a.txt": "alpha\n",
        "x": "x\n",
        "src/b.py": "print('b')\n",
        "sub/c.txt": "c\n",
        "names.txt": f"{out}/secret.txt\0/etc/hostname\0",
        "rgrc": "--pre=./planted.sh\n",
        "cfg/git/config": "[core]\n\tfsmonitor = ./planted.sh\n\tpager = ./planted.sh\n",
        "--pre=planted.sh": "",
        "-ecat": "",
    }
    for rel, text in files.items():
        (ws / rel).write_text(text)
    planted = ws / "planted.sh"
    planted.write_text(f"#!/bin/sh\ncat {out}/secret.txt\n")
    planted.chmod(0o755)
    (ws / ".gitconfig").write_text("[core]\n\tfsmonitor = ./planted.sh\n")
    (ws / "link").symlink_to(out)  # a committed symlink that leads outside
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@e", "-c", "core.hooksPath=/dev/null"]
    subprocess.run([*git, "init", "-q", str(ws)], check=True)
    subprocess.run([*git, "-C", str(ws), "add", "-A"], check=True)
    subprocess.run([*git, "-C", str(ws), "commit", "-qm", "init"], check=True)
    (ws / "a.txt").write_text("alpha changed\n")
    return {"base": base, "ws": ws, "home": home}


def _environ(world: dict[str, Path]) -> dict[str, str]:
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": str(world["home"]),
        "LANG": "C.UTF-8",
        "GIT_PAGER": "cat",
        "PAGER": "cat",
        "TERM": "dumb",
    }


def decide(command: str, world: dict[str, Path], folders: Sequence[FolderAccess] = ()) -> Decision:
    """What the local tier's policy decides (the classifier, then the file-system look)."""
    # an open local tier (network on): the allowlist decides, as it does there
    open_tier = Tier(sandbox="local", network=True, scratch=True)
    policy = PolicyApproval(workspace=world["ws"], tier=open_tier, folders=folders)
    return asyncio.run(policy.decide(ApprovalRequest(tool="run", command=command)))


def fuzzing(examples: int) -> settings:
    """Hypothesis settings of the fuzzers: ``examples`` commands, no deadline, no database."""
    return settings(
        max_examples=examples,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
        database=None,
    )


def _programs(command: str) -> set[str]:
    """The program names a classified command line may run (every simple command's argv[0],
    past assignments and `timeout`), plus the shell."""
    names = {"dash"}
    for part in command.replace("&&", ";").replace("|", ";").split(";"):
        words = [w for w in part.split() if "=" not in w.split("/")[0] or w.startswith("-")]
        words = [w for w in words if not (w[0].isalpha() and "=" in w and w.index("=") > 0)]
        if words:
            names.add(os.path.basename(words[0]))
    return names


def assert_contained(command: str, world: dict[str, Path], tmp: Path) -> None:
    tmp.mkdir(parents=True, exist_ok=True)
    trace = trace_command(command, cwd=world["ws"], env=_environ(world), out=tmp)
    allowed_dirs = (str(world["ws"]), str(world["home"]), str(tmp))
    escaped = outside(trace, allowed=allowed_dirs)
    assert escaped == [], f"{command!r} opened {escaped}"
    ran = {os.path.basename(p) for p in trace.executed}
    assert ran <= _programs(command), f"{command!r} executed {sorted(ran - _programs(command))}"


@fuzzing(200)
@given(
    prefix=st.sampled_from(PREFIXES),
    program=st.sampled_from(PROGRAMS),
    args=st.lists(st.sampled_from(ATOMS), max_size=4),
    suffix=st.sampled_from(SUFFIXES),
)
def test_allowlist_fuzz_allowed_commands_stay_inside(
    world: dict[str, Path],
    tmp_path: Path,
    prefix: str,
    program: str,
    args: list[str],
    suffix: str,
) -> None:
    command = f"{prefix}{program} {' '.join(args)}{suffix}".strip()
    decision = decide(command, world)
    event("allowed" if decision.allowed else "refused")
    if not decision.allowed:
        return
    assert_contained(command, world, tmp_path / f"t{abs(hash(command))}")


#: Commands the classifier must keep allowing; each also runs contained.
KNOWN_GOOD = [
    "cat a.txt src/b.py",
    "grep -rn alpha .",
    "grep -e. -- a.txt",
    "rg -n alpha",
    "ls ./*.txt sub/*.txt",
    "find . -name '*.py'",
    "git status",
    "git log --oneline -n 1",
    "git diff --stat",
    "head -n 1 a.txt | wc -l",
    "NO_COLOR=1 git show HEAD --stat",
    "cd sub && cat c.txt",
    "file a.txt",
    "stat a.txt",
]


@pytest.mark.parametrize("command", KNOWN_GOOD)
def test_allowlist_known_good_commands_run_contained(
    world: dict[str, Path], tmp_path: Path, command: str
) -> None:
    decision = decide(command, world)
    assert decision.allowed, decision.reason
    assert_contained(command, world, tmp_path)
