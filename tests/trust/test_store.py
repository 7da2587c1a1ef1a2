"""TrustStore: trusted directories by resolved real path, remembered in one JSON file."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from driveros.trust import TrustError, TrustStore, broad_root


@pytest.fixture
def store(tmp_path: Path) -> TrustStore:
    return TrustStore(tmp_path / "config" / "driveros", home=tmp_path / "home")


def test_trust_store_keys_by_real_path_and_covers_subdirectories(
    store: TrustStore, tmp_path: Path
) -> None:
    project = tmp_path / "src" / "project"
    (project / "pkg").mkdir(parents=True)
    link = tmp_path / "link"
    link.symlink_to(project)
    assert not store.is_trusted(project)
    entry = store.trust(link)
    assert entry.path == str(project.resolve())
    assert store.trust(project) == entry  # trusting again changes nothing
    assert store.is_trusted(project) and store.is_trusted(project / "pkg")
    assert store.is_trusted(link / "pkg")
    assert not store.is_trusted(tmp_path / "src") and not store.is_trusted(tmp_path / "other")
    assert [e.path for e in store.entries()] == [str(project.resolve())]
    assert os.stat(store.path).st_mode & 0o777 == 0o600
    assert store.revoke(link) == [entry]
    assert not store.is_trusted(project) and store.entries() == ()


def test_trust_store_refuses_root_home_and_missing_paths(store: TrustStore, tmp_path: Path) -> None:
    (tmp_path / "home").mkdir()
    for path in (Path("/"), tmp_path / "home", tmp_path / "missing"):
        with pytest.raises(TrustError):
            store.trust(path)
    assert store.entries() == ()


def test_broad_root_names_the_root_the_home_and_what_holds_it(tmp_path: Path) -> None:
    home = tmp_path / "users" / "me"
    (home / "src" / "p").mkdir(parents=True)
    (tmp_path / "link").symlink_to(home)
    assert broad_root(Path("/"), home) == "it is the filesystem root"
    assert broad_root(home, tmp_path / "link") == "it is the home directory"
    assert broad_root(tmp_path / "users", home) == "it holds the home directory"
    assert broad_root(home / "src" / "p", home) is None
    assert broad_root(home / "src" / "p", None) is None


def test_trust_store_refuses_a_directory_holding_the_home(tmp_path: Path) -> None:
    store = TrustStore(tmp_path / "config", home=tmp_path / "users" / "me")
    (tmp_path / "users" / "me").mkdir(parents=True)
    with pytest.raises(TrustError, match="every repository below it"):
        store.trust(tmp_path / "users")


def test_trust_store_that_others_can_write_trusts_nothing(
    store: TrustStore, tmp_path: Path
) -> None:
    project = tmp_path / "p"
    project.mkdir()
    store.trust(project)
    store.path.chmod(0o666)
    assert not store.is_trusted(project)
    with pytest.raises(TrustError, match="writable by someone else"):
        store.trust(project)


@pytest.mark.parametrize("content", ["{not json", '{"version": 99}', '{"workspaces": 3}', "[]"])
def test_trust_store_corrupt_file_trusts_nothing_and_refuses_changes(
    store: TrustStore, tmp_path: Path, content: str
) -> None:
    project = tmp_path / "p"
    project.mkdir()
    store.directory.mkdir(parents=True)
    store.path.write_text(content)
    store.path.chmod(0o600)
    assert not store.is_trusted(project) and store.entries() == ()
    with pytest.raises(TrustError, match="fix or delete it"):
        store.trust(project)
    assert store.path.read_text() == content  # never overwritten


def test_trust_store_revoking_an_untrusted_path_under_a_trusted_parent(
    store: TrustStore, tmp_path: Path
) -> None:
    parent = tmp_path / "work"
    (parent / "repo").mkdir(parents=True)
    store.trust(parent)
    assert store.revoke(parent / "repo") == []
    covering = store.covering(parent / "repo")
    assert covering is not None and covering.path == str(parent.resolve())
    data = json.loads(store.path.read_text())
    assert data["version"] == 1 and [w["path"] for w in data["workspaces"]] == [str(parent)]
