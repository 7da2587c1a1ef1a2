"""What travels to a Ray worker: the suite as data plus its files, with no driver paths."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from driveros.evals import load_suite
from driveros.evals._ray import _unpack_suite, pack_suite
from driveros.evals._runner import _prepare_workspace


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@localhost", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
    )


def test_a_suite_travels_without_the_driver_paths(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "first")
    suite_dir = tmp_path / "suite"
    (suite_dir / "ws").mkdir(parents=True)
    (suite_dir / "ws" / "a.txt").write_text("fixture\n")
    (suite_dir / "ws" / "__pycache__").mkdir()
    (suite_dir / "ws" / "__pycache__" / "x.pyc").write_bytes(b"\0")
    (suite_dir / "suite.yaml").write_text(
        "name: travel\ncases:\n"
        "  - {id: plain, task: t, workspace: ws}\n"
        "  - {id: from-git, task: t, workspace: {git: ../repo}}\n"
    )
    data, archive = pack_suite(load_suite(str(suite_dir)))
    assert str(tmp_path) not in repr(data)
    shutil.rmtree(repo)
    shutil.rmtree(suite_dir)

    worker = tmp_path / "worker"
    suite = _unpack_suite(data, archive, worker)
    assert suite.root == (worker / "suite").resolve()
    plain = _prepare_workspace(suite, suite.case("plain"), worker / "p")
    assert (plain / "a.txt").read_text() == "fixture\n"
    assert not (suite.root / "ws" / "__pycache__").exists()
    cloned = _prepare_workspace(suite, suite.case("from-git"), worker / "g")
    assert "a - b" in (cloned / "calc.py").read_text()
