"""How a run's added folders reach the docker tier's sandbox (no daemon needed: the wiring
before the container is made)."""

from __future__ import annotations

from pathlib import Path

import pytest

from driveros.config import load_environment
from driveros.runs import AddedDir, RunSpec
from driveros.runs._sandbox import make_sandbox
from driveros.sandbox import DockerSandbox


def _folders(tmp_path: Path, *, discard_writes: bool = False, **spec: object) -> dict[str, bool]:
    ws, ro, rw = tmp_path / "ws", tmp_path / "ro", tmp_path / "rw"
    for d in (ws, ro, rw):
        d.mkdir(exist_ok=True)
    run = RunSpec(
        task="t",
        workspace=ws,
        sandbox="docker",
        add_dirs=[AddedDir(path=ro), AddedDir(path=rw, writable=True)],
        **spec,
    )
    env = load_environment(cwd=ws, environ={"PATH": "/usr/bin:/bin"})
    box, _ = make_sandbox(run, ws, env, discard_writes=discard_writes)
    assert isinstance(box, DockerSandbox)
    return {Path(f.at).name: f.writable for f in box.folders}


def test_docker_run_binds_an_rw_folder_writable_and_a_plain_one_read_only(
    tmp_path: Path,
) -> None:
    assert _folders(tmp_path, approve="policy") == {"ro": False, "rw": True}


@pytest.mark.parametrize("discard", [True, False])
def test_docker_never_on_the_users_tree_binds_every_folder_read_only(
    tmp_path: Path, discard: bool
) -> None:
    """``--approve never`` without ``--review`` runs only the feed's code: it changes no
    added folder, as in the local tier (docs/security.md)."""
    # discard: the one-shot sandbox, whatever the approval
    spec: dict[str, object] = {} if discard else {"approve": "never"}
    assert _folders(tmp_path, discard_writes=discard, **spec) == {"ro": False, "rw": False}
