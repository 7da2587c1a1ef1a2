"""More ways a repository's code runs in the one-shot feed: a pytest plugin named in the
project's pytest configuration, and a unittest suite declared as the Makefile's ``test``
target (docs/intel.md, "The declared build"). Each writes into the tree when imported. In a
writable sandbox the writes land (the vector is live); through ``driveros agent --fix`` the
tree is as it was."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import pytest

from driveros.intel import DiagnosticsFeed
from driveros.sandbox import LocalSandbox
from tests.cli.conftest import run_cli
from tests.security._oneshot import LATE_WRITE_WAIT, differences, tree_state

WRITES = (
    "import pathlib\n"
    "_here = pathlib.Path(__file__).resolve().parent\n"
    "with open(_here / 'lib.py', 'a') as _f:\n"
    "    _f.write('# pwned\\n')\n"
    "(_here / 'planted.txt').write_text('x')\n"
)
LIB = "def twice(x):\n    return 2 * x\n"


def _pytest_plugin(root: Path) -> None:
    (root / "pyproject.toml").write_text(
        '[tool.pytest.ini_options]\naddopts = "-p evilplugin"\npythonpath = ["."]\n'
    )
    (root / "evilplugin.py").write_text(WRITES)
    (root / "test_lib.py").write_text(
        "from lib import twice\n\n\ndef test_twice():\n    assert twice(2) == 4\n"
    )


def _makefile_unittest(root: Path) -> None:
    (root / "Makefile").write_text("test:\n\tpython3 -m unittest discover -s tests\n")
    (root / "tests").mkdir()
    (root / "tests" / "test_lib.py").write_text(
        WRITES.replace("parent\n", "parent.parent\n", 1)
        + "import sys, unittest\nsys.path.insert(0, str(_here))\nfrom lib import twice\n\n\n"
        "class T(unittest.TestCase):\n"
        "    def test_twice(self):\n"
        "        self.assertEqual(twice(2), 4)\n"
    )


VECTORS = {"pytest-plugin": _pytest_plugin, "makefile-unittest": _makefile_unittest}
ENV = {
    "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
    "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
}


def _project(root: Path, vector: str) -> Path:
    root.mkdir()
    (root / "lib.py").write_text(LIB)
    VECTORS[vector](root)
    return root


@pytest.mark.parametrize("vector", sorted(VECTORS))
async def test_oneshot_vector_is_live_in_a_writable_sandbox(tmp_path: Path, vector: str) -> None:
    root = _project(tmp_path / "p", vector)
    async with LocalSandbox(root, base_env=ENV) as box:
        await DiagnosticsFeed(box).snapshot()
    assert (root / "planted.txt").exists()
    assert (root / "lib.py").read_text().endswith("# pwned\n")


@pytest.mark.parametrize("vector", sorted(VECTORS))
async def test_oneshot_vector_changes_nothing_through_fix(tmp_path: Path, vector: str) -> None:
    root = _project(tmp_path / "p", vector)
    before = tree_state(root)
    res = await run_cli("--fix", "--format", "json", server=None, cwd=root)
    assert res.code == 0, res.stderr
    ran = res.json()["answer"]
    assert "pytest" in ran or "unittest" in ran, ran  # the vector's runner ran
    await asyncio.sleep(LATE_WRITE_WAIT / 5)
    assert differences(before, tree_state(root)) == []


@pytest.mark.docker
async def test_oneshot_vector_changes_nothing_through_fix_in_docker(tmp_path: Path) -> None:
    """The docker tier's one-shot feed runs on a scratch copy: the declared unittest suite
    runs in the container and writes only there."""
    from tests.sandbox.conftest import require_docker

    require_docker()
    root = _project(tmp_path / "p", "makefile-unittest")
    if os.geteuid() == 0:  # the container runs as 65532: let it write where it could
        for path in [root, *root.rglob("*")]:
            path.chmod(path.stat().st_mode | 0o777)
    before = tree_state(root)
    res = await run_cli("--fix", "--format", "json", "--sandbox", "docker", server=None, cwd=root)
    assert res.code == 0, res.stderr
    assert "unittest" in res.json()["answer"], res.json()["answer"]
    assert differences(before, tree_state(root)) == []
