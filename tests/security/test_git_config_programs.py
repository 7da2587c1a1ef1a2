"""Issue 13 row 8, the git half: a workspace whose own ``.git/config`` runs programs.

A repository unpacked from an archive (or handed over by someone) carries its ``.git/config``.
Besides ``core.fsmonitor``, many keys make git run a program: ``diff.external``, a diff
driver's ``command``/``textconv`` or a ``filter`` named by ``.gitattributes``, ``gpg.program``
(run to verify a signed commit under ``log.showSignature``), ... Neither the allowlisted
``git log``/``diff``/``show``/``status`` the model runs nor driveros' own git (review, commit)
may run one. Every vector is first shown live with plain git (the marker appears), then
driven through the real agent loop, the real sandboxes and ``driveros._git``.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from driveros import _git as git_module
from driveros._git import run_git
from driveros._git_pins import is_program_key
from driveros.agent import ToolResult
from driveros.approval import ApprovalRequest, PolicyApproval, Tier, classify_command
from driveros.config import load_environment
from driveros.runs import RunSpec, execute_run
from driveros.sandbox import DockerSandbox, LocalSandbox
from driveros.testing import ScriptedModelServer, ToolCallSpec, Turn
from tests._scripted import model_environ
from tests.sandbox.conftest import SANDBOX_UID, require_docker
from tests.security._hostile_git import WHO, git, hostile_repo, make_racy, program

#: Keys git's documentation (git-config(1) and the pages it points to) describes as naming a
#: program, a shell command or a hook: each must be recognised by ``is_program_key``.
DOCUMENTED_PROGRAM_KEYS = [
    "core.fsmonitor",
    "core.hooksPath",
    "core.pager",
    "core.editor",
    "core.askPass",
    "core.sshCommand",
    "core.gitProxy",
    "core.alternateRefsCommand",
    "core.worktree",  # not a program: points git (and its filters) at another tree
    "sequence.editor",
    "interactive.diffFilter",
    "pager.log",
    "pager.status",
    "alias.st",
    "diff.external",
    "diff.evil.command",
    "diff.Evil Driver.textconv",
    "diff.tool",
    "diff.guitool",
    "difftool.x.cmd",
    "difftool.x.path",
    "merge.x.driver",
    "merge.tool",
    "mergetool.x.cmd",
    "mergetool.x.path",
    "filter.evil.clean",
    "filter.evil.smudge",
    "filter.evil.process",
    "filter.a.b.clean",
    "gpg.program",
    "gpg.openpgp.program",
    "gpg.x509.program",
    "gpg.ssh.program",
    "gpg.ssh.defaultKeyCommand",
    "log.showSignature",
    "credential.helper",
    "credential.https://example.com.helper",
    "remote.origin.uploadpack",
    "remote.origin.receivepack",
    "remote.origin.vcs",
    "protocol.allow",
    "protocol.ext.allow",
    "url.ext::sh -c touch% /tmp/x.insteadOf",
    "url.x.pushInsteadOf",
    "uploadpack.packObjectsHook",
    "submodule.sm.update",
    "tar.tgz.command",
    "sendemail.sendmailCmd",
    "sendemail.toCmd",
    "sendemail.ccCmd",
    "sendemail.smtpServer",
    "browser.x.cmd",
    "browser.x.path",
    "man.x.cmd",
    "man.x.path",
    "web.browser",
    "guitool.x.cmd",
    "trailer.sign.command",
    "trailer.sign.cmd",
    "hook.lint.command",
    "init.templateDir",
    "include.path",
    "includeIf.gitdir:/x/.path",
    "gc.recentObjectsHook",
    "imap.tunnel",
    "help.browser",
    "man.viewer",
    "instaweb.httpd",
    "instaweb.browser",
    # Git LFS (its filter, usually configured globally, reads these from the repository)
    "lfs.customtransfer.x.path",
    "lfs.extension.x.clean",
    "lfs.extension.x.smudge",
    "lfs.standalonetransferagent",
]
#: What a clone or ``git init`` writes, and common per-repository settings: never refused.
ORDINARY_KEYS = [
    "core.repositoryformatversion",
    "core.filemode",
    "core.bare",
    "core.logallrefupdates",
    "core.ignorecase",
    "core.autocrlf",
    "remote.origin.url",
    "remote.origin.fetch",
    "branch.main.remote",
    "branch.main.merge",
    "user.name",
    "user.email",
    "pull.rebase",
    "diff.renames",
    "diff.algorithm",
    "merge.conflictStyle",
    "log.decorate",
    "commit.gpgSign",  # the user's choice to sign; the program is gpg.program
    "filter.lfs.required",
    "submodule.sm.url",
    "submodule.sm.active",
    "lfs.repositoryformatversion",
    "lfs.url",
    "gc.auto",
]


@pytest.mark.parametrize("key", DOCUMENTED_PROGRAM_KEYS)
def test_every_documented_program_key_is_recognised(key: str) -> None:
    assert is_program_key(key)
    # git prints section and variable in lower case, the subsection as written
    section, _, rest = key.partition(".")
    head, dot, var = rest.rpartition(".")
    assert is_program_key(f"{section.lower()}.{head}{dot}{var.lower()}")
    assert is_program_key(key.upper())


@pytest.mark.parametrize("key", ORDINARY_KEYS)
def test_ordinary_keys_are_not_program_keys(key: str) -> None:
    assert not is_program_key(key)


#: (name, keys to set (value: the marker command), the allowlisted command that runs it)
VECTORS = [
    ("diff-external", ("diff.external",), "git diff"),
    ("diff-driver-command", ("diff.evil.command",), "git diff"),
    ("textconv-log", ("diff.evil.textconv",), "git log -p"),
    ("textconv-show", ("diff.evil.textconv",), "git show"),
    ("clean-filter-diff", ("filter.evil.clean",), "git diff"),
    ("process-filter-diff", ("filter.evil.process",), "git diff"),
    ("clean-filter-status", ("filter.evil.clean",), "git status"),
    ("gpg-log", ("gpg.program",), "git log"),
    ("gpg-show", ("gpg.program",), "git show"),
    ("gpg-ssh-log", ("gpg.ssh.program",), "git log"),
]


def prepare(
    tmp_path: Path,
    name: str,
    keys: tuple[str, ...],
    marker: Path | str,
    root: str | None = None,
) -> Path:
    repo = hostile_repo(tmp_path, keys, marker, root)
    if name == "clean-filter-status":
        make_racy(repo)
    return repo


@pytest.mark.parametrize(("name", "keys", "command"), VECTORS, ids=[v[0] for v in VECTORS])
def test_vector_is_live_with_plain_git(
    tmp_path: Path, name: str, keys: tuple[str, ...], command: str
) -> None:
    """The control: plain git in the repository really runs the planted program."""
    marker = tmp_path / "PWNED"
    repo = prepare(tmp_path, name, keys, marker)
    subprocess.run(
        command.split(),
        cwd=repo,
        capture_output=True,
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path)},
        check=False,
    )
    assert marker.exists(), f"{name}: the vector did not fire with plain git"


@pytest.mark.parametrize(("name", "keys", "command"), VECTORS, ids=[v[0] for v in VECTORS])
async def test_model_git_command_runs_no_planted_program(
    tmp_path: Path, name: str, keys: tuple[str, ...], command: str
) -> None:
    """The scripted model runs the allowlisted command in the local tier: it is not
    auto-allowed (the reason names the key), and nothing ran."""
    marker = tmp_path / "PWNED"
    repo = prepare(tmp_path, name, keys, marker)
    turns = [Turn(tool_calls=[ToolCallSpec("run", {"command": command})]), Turn(text="done")]
    results: list[ToolResult] = []

    async def on_event(event: object) -> None:
        if isinstance(event, ToolResult):
            results.append(event)

    async with ScriptedModelServer(turns) as server:
        environ = {"PATH": os.environ["PATH"], **model_environ(server, "openai", "sk-test-0")}
        env = load_environment(cwd=repo, environ=environ)
        report = await execute_run(
            RunSpec(task="look at the history", workspace=repo, diagnostics=False),
            env=env,
            on_event=on_event,
        )
    assert report.result.error is None, report.result
    assert not marker.exists(), f"{name}: `{command}` ran the repository's program"
    assert len(results) == 1 and not results[0].ok
    assert keys[0].lower() in results[0].output.lower(), results[0].output


async def test_policy_allows_git_in_an_ordinary_repository(tmp_path: Path) -> None:
    repo = hostile_repo(tmp_path, (), tmp_path / "PWNED")
    git(repo, "config", "--unset", "log.showSignature")
    git(repo, "config", "remote.origin.url", "https://example.com/x.git")
    policy = PolicyApproval(workspace=repo, tier=Tier(sandbox="local"))
    for command in ("git log -p", "git status", "git diff", "ls && git show"):
        decision = await policy.decide(ApprovalRequest(tool="run", command=command))
        assert decision.allowed, decision.reason
    # keys no read-only git command reaches: husky's hooksPath (with a hook that would run if
    # git status wrote the index), an alias
    (repo / ".husky" / "_").mkdir(parents=True)
    plant_index_hook(repo, tmp_path / "PWNED")
    (repo / ".git" / "hooks" / "post-index-change").rename(repo / ".husky/_/post-index-change")
    git(repo, "config", "core.hooksPath", ".husky/_")
    git(repo, "config", "alias.st", "!touch PWNED")
    (tmp_path / "PWNED").unlink(missing_ok=True)  # the hook ran while the test set up
    decision = await policy.decide(ApprovalRequest(tool="run", command="git status"))
    assert decision.allowed, decision.reason
    async with LocalSandbox(repo, base_env=os.environ) as sandbox:
        assert (await sandbox.run("git status")).exit_code == 0
    assert not (tmp_path / "PWNED").exists()
    # the same check does not apply to commands that are not git
    git(repo, "config", "diff.external", program(tmp_path / "PWNED"))
    decision = await policy.decide(ApprovalRequest(tool="run", command="ls"))
    assert decision.allowed, decision.reason


@pytest.mark.parametrize(
    ("config_lines", "key"),
    [
        ("[include]\n\tpath = ../evil.cfg\n", "include.path"),
        ('[includeIf "gitdir:/"]\n\tpath = ../evil.cfg\n', "includeif.gitdir:/.path"),
        ("[core]\n\tworktree = /\n", "core.worktree"),
        ('[filter "lfs"]\n\tclean = git-lfs clean -- %f\n', "filter.lfs.clean"),
        ("[core]\n\tpager = less\n", "core.pager"),
        ('[credential "https://example.com"]\n\thelper = store\n', "credential.https"),
    ],
)
async def test_policy_asks_when_the_repository_config_names_a_program(
    tmp_path: Path, config_lines: str, key: str
) -> None:
    """Any program-running key in the repository's own config (or a file it includes, which
    the model could write) means git commands are asked about, with the key named."""
    repo = hostile_repo(tmp_path, (), tmp_path / "PWNED")
    (repo / "evil.cfg").write_text("[user]\n\tname = x\n")
    with (repo / ".git" / "config").open("a") as config:
        config.write(config_lines)
    policy = PolicyApproval(workspace=repo, tier=Tier(sandbox="local"))
    decision = await policy.decide(ApprovalRequest(tool="run", command="git status"))
    assert not decision.allowed
    assert key in decision.reason.lower(), decision.reason


@pytest.mark.parametrize(
    "command",
    ["git log '--format=%G?'", "git show -s --pretty=format:%GS", "git log --format %GK"],
)
def test_signature_formats_are_not_auto_allowed(command: str) -> None:
    """They run ``gpg.program`` (pinned to ``gpg``, still a program found on PATH)."""
    decision = classify_command(command)
    assert not decision.allowed
    assert "verifies signatures" in decision.reason


async def test_policy_reads_the_config_of_an_included_file(tmp_path: Path) -> None:
    """An include outside the workspace is read, and what it sets is judged."""
    outside = tmp_path / "shared.cfg"
    outside.write_text(f"[diff]\n\texternal = {program(tmp_path / 'PWNED')}\n")
    repo = hostile_repo(tmp_path, (), tmp_path / "PWNED")
    git(repo, "config", "--unset", "log.showSignature")
    git(repo, "config", "include.path", str(outside))
    policy = PolicyApproval(workspace=repo, tier=Tier(sandbox="local"))
    decision = await policy.decide(ApprovalRequest(tool="run", command="git diff"))
    assert not decision.allowed
    assert "diff.external" in decision.reason, decision.reason


async def test_policy_reads_the_worktree_config(tmp_path: Path) -> None:
    """``extensions.worktreeConfig`` adds ``.git/config.worktree`` (scope ``worktree``)."""
    marker = tmp_path / "PWNED"
    repo = hostile_repo(tmp_path, (), marker)
    git(repo, "config", "--unset", "log.showSignature")
    git(repo, "config", "core.repositoryFormatVersion", "1")
    git(repo, "config", "extensions.worktreeConfig", "true")
    (repo / ".git" / "config.worktree").write_text(
        f'[filter "evil"]\n\tclean = {program(marker)}\n'
    )
    policy = PolicyApproval(workspace=repo, tier=Tier(sandbox="local"))
    decision = await policy.decide(ApprovalRequest(tool="run", command="git diff"))
    assert not decision.allowed
    assert "filter.evil.clean" in decision.reason, decision.reason
    await run_git(["add", "-A"], cwd=repo)
    assert not marker.exists()


async def test_policy_asks_when_a_submodule_config_names_a_program(tmp_path: Path) -> None:
    """`git status`/`diff` run git inside populated submodules, with their own config."""
    marker = tmp_path / "PWNED"
    source = tmp_path / "subsrc"
    source.mkdir()
    git(source, "init", "-q", "-b", "main")
    (source / "a.txt").write_text("a\n")
    (source / ".gitattributes").write_text("a.txt filter=evil\n")
    git(source, "add", "-A")
    git(source, *WHO, "commit", "-qm", "i")
    repo = tmp_path / "ws"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(source), "sm")
    git(repo, *WHO, "commit", "-qm", "with a submodule")
    git(repo / "sm", "config", "filter.evil.clean", program(marker))
    stamp = (repo / "sm" / "a.txt").stat().st_mtime + 5
    os.utime(repo / "sm" / "a.txt", (stamp, stamp))
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path)}
    subprocess.run(["git", "status"], cwd=repo, capture_output=True, env=env, check=False)
    assert marker.exists()  # live
    marker.unlink()
    policy = PolicyApproval(workspace=repo, tier=Tier(sandbox="local"))
    decision = await policy.decide(ApprovalRequest(tool="run", command="git status"))
    assert not decision.allowed
    assert "filter.evil.clean" in decision.reason and "sm" in decision.reason, decision.reason
    async with LocalSandbox(repo, base_env=env) as sandbox:
        await sandbox.run("git status")  # defence in depth: submodules are not entered
    assert not marker.exists()


#: Keys with a fixed name: pinned for every command the sandboxes run, whatever the policy.
PINNED = [
    ("gpg-log", ("gpg.program",), "git log"),
    ("gpg-show", ("gpg.program",), "git show"),
    ("gpg-format", ("gpg.program",), "git log --format=%G?"),
    ("gpg-ssh-log", ("gpg.ssh.program",), "git log"),
]


@pytest.mark.parametrize(("name", "keys", "command"), PINNED, ids=[p[0] for p in PINNED])
async def test_local_sandbox_pins_fixed_program_keys(
    tmp_path: Path, name: str, keys: tuple[str, ...], command: str
) -> None:
    marker = tmp_path / "PWNED"
    repo = prepare(tmp_path, name, keys, marker)
    async with LocalSandbox(repo, base_env=os.environ) as sandbox:
        result = await sandbox.run(command)
    assert not marker.exists(), (name, result)


def plant_index_hook(repo: Path, marker: Path | str) -> None:
    """A ``post-index-change`` hook as an archive brings it: git runs it whenever it writes
    the index, and ``git status`` writes it to refresh stat data."""
    hook = repo / ".git" / "hooks" / "post-index-change"
    hook.write_text(f"#!/bin/sh\ntouch {marker}\n")
    hook.chmod(0o755)
    make_racy(repo)


def test_index_hook_is_live_with_plain_git(tmp_path: Path) -> None:
    marker = tmp_path / "PWNED"
    repo = hostile_repo(tmp_path, (), marker)
    plant_index_hook(repo, marker)
    marker.unlink(missing_ok=True)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path)}
    subprocess.run(["git", "status"], cwd=repo, capture_output=True, env=env, check=False)
    assert marker.exists()


async def test_local_sandbox_git_status_runs_no_index_hook(tmp_path: Path) -> None:
    marker = tmp_path / "PWNED"
    repo = hostile_repo(tmp_path, (), marker)
    plant_index_hook(repo, marker)
    marker.unlink(missing_ok=True)
    async with LocalSandbox(repo, base_env=os.environ) as sandbox:
        result = await sandbox.run("git status")
    assert result.exit_code == 0, result.stderr
    assert not marker.exists()


#: Ordinary git work in the sandbox: the pins must not get in its way (commits go to a clone:
#: the docker tier mounts the workspace's .git read-only).
ORDINARY_GIT = (
    "git status && git diff && git log -p -1 && git show --stat"
    ' && git clone -q . "$TMPDIR/copy" && cd "$TMPDIR/copy" && echo x > more.txt'
    " && git add -A && git -c user.name=t -c user.email=t@t commit -qm next"
    " && git fetch -q origin && git log --format=%s -1"
)


async def check_ordinary_git(sandbox: LocalSandbox | DockerSandbox) -> None:
    result = await sandbox.run(ORDINARY_GIT)
    assert result.exit_code == 0, result.stderr
    assert "+three" in result.stdout and "+two" in result.stdout, result.stdout
    assert result.stdout.rstrip().endswith("next"), result.stdout


async def test_local_sandbox_git_works_as_usual(tmp_path: Path) -> None:
    repo = hostile_repo(tmp_path, (), tmp_path / "PWNED")
    git(repo, "config", "--unset", "log.showSignature")
    async with LocalSandbox(repo, base_env=os.environ) as sandbox:
        await check_ordinary_git(sandbox)


@pytest.mark.docker
async def test_docker_sandbox_git_works_as_usual(tmp_path: Path) -> None:
    require_docker()
    repo = hostile_repo(tmp_path, (), "/workspace/PWNED", "/workspace")
    git(repo, "config", "--unset", "log.showSignature")
    if os.geteuid() == 0:
        for path in [repo, *repo.rglob("*")]:
            os.chown(path, SANDBOX_UID, SANDBOX_UID, follow_symlinks=False)
    async with DockerSandbox(repo) as sandbox:
        await check_ordinary_git(sandbox)


@pytest.mark.parametrize(("name", "keys", "command"), VECTORS, ids=[v[0] for v in VECTORS])
async def test_local_sandbox_pins_the_repository_program_keys(
    tmp_path: Path, name: str, keys: tuple[str, ...], command: str
) -> None:
    """Defence in depth behind the policy (a command the user approved, a test suite that
    runs git): the local sandbox also pins the driver-named keys the repository sets."""
    marker = tmp_path / "PWNED"
    repo = prepare(tmp_path, name, keys, marker)
    async with LocalSandbox(repo, base_env=os.environ) as sandbox:
        result = await sandbox.run(command)
    assert not marker.exists(), (name, result)
    if "diff.external" in keys or "diff.evil.command" in keys:
        # no value unsets an external diff: git stops and says why
        assert "--no-ext-diff" in result.stderr, result
    else:
        assert result.exit_code == 0, result  # otherwise git works as without the key


@pytest.mark.docker
@pytest.mark.parametrize(("name", "keys", "command"), PINNED, ids=[p[0] for p in PINNED])
async def test_docker_sandbox_pins_fixed_program_keys(
    tmp_path: Path, name: str, keys: tuple[str, ...], command: str
) -> None:
    """The same pins in the container (where every command is allowed anyway: the pins keep
    git itself from being the one that runs a planted program)."""
    require_docker()
    repo = prepare(tmp_path, name, keys, "/workspace/PWNED", "/workspace")
    if os.geteuid() == 0:
        for path in [repo, *repo.rglob("*")]:
            os.chown(path, SANDBOX_UID, SANDBOX_UID, follow_symlinks=False)
    async with DockerSandbox(repo) as sandbox:
        control = await sandbox.run(f"env -u GIT_CONFIG_COUNT {command} >/dev/null 2>&1; ls")
        assert "PWNED" in control.stdout, control  # live in the container without the pins
        await sandbox.run("rm -f PWNED")
        result = await sandbox.run(command)
    assert not (repo / "PWNED").exists(), (name, result)


#: driveros' own git calls on the user's repository.
OWN = [
    ("add", ("filter.evil.clean",), ["add", "-A"]),
    ("add-process", ("filter.evil.process",), ["add", "-A"]),
    ("checkout", ("filter.evil.smudge",), ["checkout-index", "--all", "--force"]),
    ("diff", ("diff.external",), ["diff"]),
    ("diff-textconv", ("diff.evil.textconv",), ["diff", "HEAD~1"]),
    ("log", ("gpg.program",), ["log", "-1"]),
    ("status", ("filter.evil.clean",), ["status", "--porcelain"]),
]


@pytest.mark.parametrize(("name", "keys", "args"), OWN, ids=[o[0] for o in OWN])
async def test_driveros_git_runs_no_repository_program(
    tmp_path: Path, name: str, keys: tuple[str, ...], args: list[str]
) -> None:
    marker = tmp_path / "PWNED"
    repo = hostile_repo(tmp_path, keys, marker)
    if name == "status":
        make_racy(repo)
    if name == "checkout":
        (repo / "notes.txt").unlink()
    result = await run_git(args, cwd=repo, check=False)
    assert not marker.exists(), f"driveros' own `git {' '.join(args)}` ran a planted program"
    if name == "diff":
        assert "--no-ext-diff" in result.error  # git stops and says why
    else:
        assert result.returncode == 0, result.error  # and works as without the key


async def test_driveros_commit_signs_with_the_users_program_not_the_repositorys(
    tmp_path: Path,
) -> None:
    """``commit.gpgSign`` with the repository's ``gpg.program``: the user's own commit (with
    their hooks and environment) must not run it; the user's global setting still applies."""
    marker = tmp_path / "PWNED"
    repo = hostile_repo(tmp_path, ("gpg.program", "filter.evil.clean"), marker)
    git(repo, "config", "commit.gpgSign", "true")
    user_signer = tmp_path / "user-gpg"
    user_signer.write_text(f"#!/bin/sh\ntouch {tmp_path}/USER_SIGNED\nexit 1\n")
    user_signer.chmod(0o755)
    global_config = tmp_path / "global.cfg"
    global_config.write_text(f"[gpg]\n\tprogram = {user_signer}\n")
    environ = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path),
        "GIT_CONFIG_GLOBAL": str(global_config),
        **dict(zip(("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL"), ("t", "t@t"), strict=True)),
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
    }
    (repo / "notes.txt").write_text("changed by the agent\n")
    old = dict(os.environ)
    os.environ.clear()
    os.environ.update(environ)
    try:
        await run_git(["add", "-A"], cwd=repo, hooks="user", check=False)
        await run_git(["commit", "-q", "-m", "x"], cwd=repo, hooks="user", check=False)
    finally:
        os.environ.clear()
        os.environ.update(old)
    assert not marker.exists()
    assert (tmp_path / "USER_SIGNED").exists()  # the user's own signer was asked


#: Driver names a ``.gitattributes`` value can carry: no whitespace, no control characters.
DRIVER_NAMES = st.text(
    alphabet=st.characters(
        blacklist_categories=("Cs", "Cc", "Zs", "Zl", "Zp"), blacklist_characters='"\\'
    ),
    min_size=1,
    max_size=10,
)


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(name=DRIVER_NAMES, variable=st.sampled_from(["clean", "process"]))
def test_driveros_git_pins_a_filter_of_any_name(
    tmp_path_factory: pytest.TempPathFactory, name: str, variable: str
) -> None:
    """Whatever the driver is called (dots, ``=``, non-ASCII...), it is recognised and pinned:
    driveros' own ``git add`` never runs it, and plain git does."""
    base = tmp_path_factory.mktemp("driver")
    marker = base / "PWNED"
    repo = hostile_repo(base, (), marker)
    (repo / ".gitattributes").write_text(f"*.txt filter={name}\n")
    git(repo, "config", f"filter.{name}.{variable}", program(marker))
    listed = subprocess.run(
        ["git", "-C", str(repo), "config", "--list", "--show-scope"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert f"filter.{name}.{variable}=" in listed
    assert is_program_key(f"filter.{name}.{variable}")
    (repo / "notes.txt").write_text("changed\n")
    asyncio.run(run_git(["add", "-A"], cwd=repo, check=False))
    assert not marker.exists()
    (repo / "notes.txt").write_text("changed again\n")
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(base)}
    subprocess.run(["git", "add", "-A"], cwd=repo, capture_output=True, env=env, check=False)
    assert marker.exists()  # the control: the same driver is live for plain git


async def test_a_fifo_git_config_never_holds_the_local_sandbox_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A workspace whose ``.git/config`` is a FIFO (an archive's, or made by an earlier run's
    command where there was no ``.git`` to guard): reading it for the pins blocks git for
    ever; the sandbox gives up on the pins after a while and starts."""
    ws = tmp_path / "ws"
    ws.mkdir()
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    (ws / ".git" / "config").unlink()
    os.mkfifo(ws / ".git" / "config")
    monkeypatch.setattr(git_module, "PINS_TIMEOUT", 1.0)
    async with asyncio.timeout(60), LocalSandbox(ws) as box:
        done = await box.run("echo started")
    assert (done.exit_code, done.stdout) == (0, "started\n"), done
