"""exclude_pattern: a gitignore line that matches exactly one file name, whatever its bytes."""

from __future__ import annotations

import subprocess
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from driveros.review._snapshot import exclude_pattern

_NAME = st.text(
    alphabet=st.characters(blacklist_characters="/\0\n\r", blacklist_categories=("Cs",)),
    min_size=1,
    max_size=12,
).filter(lambda s: s not in (".", ".."))


def _ignored(repo: Path, pattern: str, path: str) -> bool:
    (repo / ".git" / "info" / "exclude").write_text(pattern + "\n", encoding="utf-8")
    proc = subprocess.run(
        [
            "git",
            "-C",
            str(repo),
            "-c",
            "core.quotePath=false",
            "check-ignore",
            "-q",
            "--no-index",
            "--",
            "./" + path,  # never pathspec magic (a name starting with ':'), just the path
        ],
        capture_output=True,
    )
    return proc.returncode == 0


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(dirname=_NAME, name=_NAME, other=_NAME)
def test_exclude_pattern_matches_exactly_that_file(
    tmp_path: Path, dirname: str, name: str, other: str
) -> None:
    repo = tmp_path / "r"
    if not repo.exists():
        subprocess.run(["git", "init", "-q", str(repo)], check=True)
    rel = f"{dirname}/{name}"
    pattern = exclude_pattern(rel)
    assert _ignored(repo, pattern, rel)
    if other != name:
        assert not _ignored(repo, pattern, f"{dirname}/{other}")
    assert not _ignored(repo, pattern, f"x/{rel}")
