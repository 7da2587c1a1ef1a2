"""Hostile repositories for the git-configuration tests: a ``.git/config`` that names
programs (the marker they leave shows one ran), and a ``git`` on PATH that logs or refuses."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest


def git(repo: Path, *args: str, env: dict[str, str] | None = None) -> str:
    base = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(repo.parent)}
    done = subprocess.run(
        ["git", "-C", str(repo), *args],
        capture_output=True,
        text=True,
        check=True,
        env=base | (env or {}),
    )
    return done.stdout


WHO = ("-c", "user.name=t", "-c", "user.email=t@t")


def program(marker: Path | str) -> str:
    """A shell command that leaves ``marker`` and passes its input through (a filter)."""
    return f"touch {marker}; cat"


def plant_script(repo: Path, marker: Path | str) -> None:
    """``evil.sh`` in the workspace (left untracked): for keys git runs without a shell."""
    script = repo / "evil.sh"
    script.write_text(f"#!/bin/sh\ntouch {marker}\ncat\n")
    script.chmod(0o755)


#: Keys git runs as a program path, not through the shell.
EXEC_KEYS = frozenset({"gpg.program", "gpg.ssh.program"})


def hostile_repo(
    base: Path, keys: tuple[str, ...], marker: Path | str, root: str | None = None
) -> Path:
    """A repository as unpacked from an archive: ``.gitattributes`` names the ``evil``
    drivers, the last commit carries a signature, ``.git/config`` sets ``keys``. ``root`` is
    where commands see the repository (``/workspace`` in a container)."""
    repo = base / "ws"
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    (repo / "notes.txt").write_text("one\n")
    (repo / ".gitattributes").write_text("*.txt filter=evil diff=evil\n")
    git(repo, "add", "-A")
    git(repo, *WHO, "commit", "-qm", "init")
    (repo / "notes.txt").write_text("one\ntwo\n")
    git(repo, "add", "-A")
    tree = git(repo, "write-tree").strip()
    parent = git(repo, "rev-parse", "HEAD").strip()
    armor = "SSH SIGNATURE" if "gpg.ssh.program" in keys else "PGP SIGNATURE"
    signed = (
        f"tree {tree}\nparent {parent}\nauthor t <t@t> 1 +0000\ncommitter t <t@t> 1 +0000\n"
        f"gpgsig -----BEGIN {armor}-----\n \n iQ==\n -----END {armor}-----\n"
        "\nsigned\n"
    )
    commit = subprocess.run(
        ["git", "-C", str(repo), "hash-object", "-t", "commit", "-w", "--stdin"],
        input=signed,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    git(repo, "update-ref", "refs/heads/main", commit)
    (repo / "notes.txt").write_text("one\ntwo\nthree\n")  # a change for `git diff`
    git(repo, "config", "log.showSignature", "true")
    where = root or str(repo)
    plant_script(repo, marker)
    (repo / "allowed_signers").write_text("t@t ssh-ed25519 AAAA\n")
    git(repo, "config", "gpg.ssh.allowedSignersFile", f"{where}/allowed_signers")
    for key in keys:
        git(repo, "config", key, f"{where}/evil.sh" if key in EXEC_KEYS else program(marker))
    return repo


def make_racy(repo: Path) -> None:
    """Leave ``notes.txt`` unchanged but with a new mtime: status must look at its content."""
    (repo / "notes.txt").write_text((repo / "notes.txt").read_text())
    git(repo, "-c", "filter.evil.clean=cat", "add", "-A")
    stamp = (repo / "notes.txt").stat().st_mtime + 5
    os.utime(repo / "notes.txt", (stamp, stamp))


def use_git_without_show_scope(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Put a ``git`` first on PATH that refuses ``--show-scope`` as a git before 2.26 does."""
    real = shutil.which("git")
    old_git = tmp_path / "old-git"
    old_git.mkdir()
    (old_git / "git").write_text(
        '#!/bin/sh\nfor a in "$@"; do\n  if [ "$a" = --show-scope ]; then\n'
        '    echo "error: unknown option \\`show-scope\'" >&2; exit 129\n  fi\ndone\n'
        f'exec {real} "$@"\n'
    )
    (old_git / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{old_git}:{os.environ['PATH']}")


def logging_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A ``git`` first on PATH that appends its arguments to the returned log, then runs git."""
    real = shutil.which("git")
    bindir, log = tmp_path / "logging-git", tmp_path / "git.log"
    bindir.mkdir()
    (bindir / "git").write_text(f'#!/bin/sh\necho "$*" >> {log}\nexec {real} "$@"\n')
    (bindir / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}:{os.environ['PATH']}")
    return log
