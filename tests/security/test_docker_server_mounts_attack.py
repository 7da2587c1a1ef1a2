"""The docker tier binds the host's language servers read-only into the container, found on
the user's ``PATH``; ``GOROOT`` is taken as the directory above ``go``'s resolved ``bin``. A
repository with an activated venv on ``PATH`` (``.venv/bin``) commits ``go`` and ``gopls``
there as symlinks to an executable in the user's ``GOPATH`` (``~/go/bin/...``), or plants
them at its root for a ``PATH`` holding ``.``: ``~/go/{src,pkg,bin}`` (every Go checkout of
the user, their ``.env`` files) would be bound into the container it runs in. Only absolute
``PATH`` entries outside the workspace and the hidden trees choose what is bound."""

from __future__ import annotations

from pathlib import Path

import pytest

from driveros.semantic import docker_server_mounts


@pytest.fixture
def gopath(tmp_path: Path) -> Path:
    """The user's GOPATH: other checkouts (a secret among them) and a tool in its bin."""
    gopath = tmp_path / "home" / "go"
    (gopath / "src" / "private").mkdir(parents=True)
    (gopath / "src" / "private" / ".env").write_text("TOKEN=other-repo-secret\n")
    (gopath / "pkg").mkdir()
    (gopath / "bin").mkdir()
    tool = gopath / "bin" / "tool"
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    return gopath


def _sources(mounts: dict[str, str]) -> list[Path]:
    return [Path(source) for source in mounts]


@pytest.mark.parametrize("how", ["venv_links", "relative_path"])
def test_docker_server_mounts_attack_a_planted_go_binds_nothing_of_the_user(
    tmp_path: Path, gopath: Path, how: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = tmp_path / "ws"
    planted = ws / ".venv" / "bin" if how == "venv_links" else ws
    planted.mkdir(parents=True)
    for name in ("go", "gopls"):
        (planted / name).symlink_to(gopath / "bin" / "tool")
    monkeypatch.chdir(ws)
    entry = str(planted) if how == "venv_links" else "."
    environ = {"PATH": f"{entry}:/nonexistent", "HOME": str(tmp_path / "home")}
    mounts = docker_server_mounts(environ, hidden=[ws])
    leaked = [s for s in _sources(mounts) if s.is_relative_to(gopath)]
    assert leaked == [], mounts
