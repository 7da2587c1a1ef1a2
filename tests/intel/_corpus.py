"""The corpus of real projects (issue 36): built at test time from what scripts/fetch-corpus.sh
fetched once (sdists, npm tarballs, Debian's Go sources), each with one injected bug.

Nothing here touches the network. A missing corpus skips with the command that fetches it,
except in CI (``DRIVEROS_CI=1``), where it fails.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tarfile
from dataclasses import dataclass
from pathlib import Path

import pytest


def corpus_dir() -> Path:
    default = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "driveros"
    return Path(os.environ.get("DRIVEROS_CORPUS") or default / "corpus")


@dataclass(frozen=True)
class RealProject:
    """One corpus project: where it comes from, its one-line bug and the test that sees it."""

    name: str
    source: str  # a file or directory under corpus_dir()
    path: str  # the file the bug is in
    good: str  # the line as the project has it
    bad: str  # the line with the injected bug
    failing: str  # the failing test's id (the item's identity)
    check: str  # the check that reports it
    tool: str  # what must be installed to run its tests
    go_mod: str | None = None  # Debian's Go sources come without a go.mod

    def build(self, dest: Path) -> Path:
        """The project in ``dest``: extracted, a git repository, with the bug injected."""
        src = corpus_dir() / self.source
        if not src.exists():
            missing = f"corpus project {src} is missing: run scripts/fetch-corpus.sh"
            if os.environ.get("DRIVEROS_CI") == "1":
                pytest.fail(missing)
            pytest.skip(missing)
        if shutil.which(self.tool) is None:
            if os.environ.get("DRIVEROS_CI") == "1":
                pytest.fail(f"{self.tool} is not installed (.ci/run installs it)")
            pytest.skip(f"{self.tool} is not installed")
        if src.is_file():
            dest.mkdir(parents=True)
            with tarfile.open(src) as tar:
                tar.extractall(dest, filter="data")
            (top,) = dest.iterdir()
            root = top
        else:
            root = dest / src.name
            shutil.copytree(src, root, symlinks=True)
        if self.go_mod is not None:
            (root / "go.mod").write_text(self.go_mod)
        git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"]
        subprocess.run([*git, "init", "-q"], cwd=root, check=True)
        with (root / ".gitignore").open("a") as ignore:
            ignore.write("\nnode_modules/\n")
        subprocess.run([*git, "add", "-A"], cwd=root, check=True)
        subprocess.run([*git, "commit", "-qm", "corpus"], cwd=root, check=True)
        target = root / self.path
        text = target.read_text()
        assert text.count(self.good) == 1, f"{self.name}: the line to break is not unique"
        target.write_text(text.replace(self.good, self.bad))
        return root


MORE_ITERTOOLS = RealProject(
    name="more-itertools",
    source="more-itertools-10.5.0.tar.gz",
    path="more_itertools/more.py",
    good="if len(chunk) != n:",
    bad="if len(chunk) > n:",
    failing="tests/test_more.py::ChunkedTests::test_strict_being_true",
    check="unittest",
    tool="python3",
)
QS = RealProject(
    name="qs",
    source="qs-6.13.0",
    path="lib/parse.js",
    good="index <= options.arrayLimit",
    bad="index < options.arrayLimit",
    failing="test/parse.js::limits specific array indices to arrayLimit::should be deeply "
    "equivalent",
    check="tape",
    tool="node",
)
GO_DIFFLIB = RealProject(
    name="go-difflib",
    source="go-difflib",
    path="difflib/difflib.go",
    good="return 2.0 * float64(matches) / float64(length)",
    bad="return 1.0 * float64(matches) / float64(length)",
    failing="difflib/difflib_test.go::TestSequenceMatcherRatio",
    check="go-test",
    tool="go",
    go_mod="module github.com/pmezard/go-difflib\n\ngo 1.19\n",
)
PROJECTS = (MORE_ITERTOOLS, QS, GO_DIFFLIB)
