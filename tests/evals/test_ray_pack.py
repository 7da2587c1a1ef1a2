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


def test_keys_go_to_the_runtime_env_never_into_task_arguments(tmp_path: Path) -> None:
    from driveros.config import load_environment
    from driveros.evals import EvalOptions, provider_env_vars
    from driveros.evals._ray import _Job

    key = "sk-test-never-in-a-task-1234567890"
    env = load_environment(
        cwd=tmp_path,
        environ={"OPENAI_API_KEY": key, "OPENAI_MODEL": "gpt-x", "HOME": str(tmp_path)},
    )
    assert provider_env_vars(env) == {"OPENAI_API_KEY": key, "OPENAI_MODEL": "gpt-x"}

    suite_dir = tmp_path / "suite"
    (suite_dir / "ws").mkdir(parents=True)
    (suite_dir / "suite.yaml").write_text("name: s\ncases:\n  - {id: a, task: t, workspace: ws}\n")
    suite = load_suite(str(suite_dir))
    data, archive = pack_suite(suite)
    options = EvalOptions(mode="live", provider="openai", output_dir=tmp_path / "out")
    job = _Job(
        suite=data,
        case_id="a",
        options=options.model_dump(mode="json", exclude={"output_dir"}),
    ).model_dump_json()
    assert key not in job and key.encode() not in archive
