"""`driveros memory ...` through the real dispatcher, on real database files."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from driveros.cli._main import main
from driveros.memory import MemoryStore, Provenance, default_db_path, scope_for
from tests.memory._embedserver import EmbeddingServer
from tests.memory.conftest import make_repo

Cap = pytest.CaptureFixture[str]


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for var in ("DRIVEROS_MEMORY_PATH", "MNEME_EMBED_MODEL", "OLLAMA_HOST", "OPENAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(tmp_path)


def seed(repo: Path, *texts: str) -> list[int]:
    async def go() -> list[int]:
        scope = await scope_for(repo)
        async with await MemoryStore.open(default_db_path(scope), scope=scope) as s:
            res = await s.apply(adds=list(texts), provenance=Provenance(run_id="run-7"))
            return res.added

    return asyncio.run(go())


def cli(capsys: Cap, *args: str) -> tuple[int, str, str]:
    code = main(["memory", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_list_search_show_forget_undo(tmp_path: Path, capsys: Cap) -> None:
    repo = make_repo(tmp_path / "repo")
    a, b = seed(repo, "go.mod declares module example.com/demo", "tests run with go test")
    ws = ("--workspace", str(repo))

    code, out, _ = cli(capsys, "list", *ws)
    assert code == 0 and out.splitlines()[0].startswith(f"#{b}\tactive\t")
    code, out, _ = cli(capsys, "search", "module path", *ws, "--format", "json")
    assert code == 0 and [f["id"] for f in json.loads(out)] == [a]
    code, out, _ = cli(capsys, "--format", "json", "show", f"#{a}", *ws)
    assert code == 0 and json.loads(out)["run_id"] == "run-7"

    code, out, err = cli(capsys, "forget", str(a), "--why", "wrong", *ws)
    assert code == 0 and f"#{a}\tforgotten" in out and f"driveros memory undo {a}" in err
    code, out, _ = cli(capsys, "search", "module path", *ws)
    assert code == 0 and out == ""
    code, out, _ = cli(capsys, "list", "--status", "forgotten", *ws)
    assert out.count("\n") == 1 and "wrong" not in out
    code, out, _ = cli(capsys, "show", str(a), *ws)
    assert "why: wrong" in out

    code, out, _ = cli(capsys, "undo", *ws)
    assert code == 0 and f"#{a}\tactive" in out
    code, out, _ = cli(capsys, "search", "module path", *ws)
    assert out.startswith(f"#{a}\tactive")


def test_cli_export_import_round_trip(tmp_path: Path, capsys: Cap) -> None:
    src = make_repo(tmp_path / "src", remote="https://example.com/org/a.git")
    dst = make_repo(tmp_path / "dst", remote="https://example.com/org/b.git")
    seed(src, "uses make", "uses ruff")
    dump = tmp_path / "dump.json"
    code, _, err = cli(capsys, "export", "-o", str(dump), "--workspace", str(src))
    assert code == 0 and "exported 2 facts" in err
    payload = json.loads(dump.read_text())
    assert payload["scope"] == "git:example.com/org/a" and len(payload["facts"]) == 2

    code, out, _ = cli(capsys, "import", str(dump), "--workspace", str(dst))
    assert code == 0 and out == "imported 2 facts\n"
    code, out, _ = cli(capsys, "import", str(dump), "--workspace", str(dst))
    assert out == "imported 0 facts\n"
    code, out, _ = cli(capsys, "stats", "--format", "json", "--workspace", str(dst))
    stats = json.loads(out)
    assert (stats["active"], stats["scope"]) == (2, "git:example.com/org/b")


def test_cli_usage_errors_exit_1(tmp_path: Path, capsys: Cap) -> None:
    repo = make_repo(tmp_path / "repo")
    ws = ("--workspace", str(repo))
    assert cli(capsys, "show", "1", *ws)[0] == 1  # no database yet
    code, out, err = cli(capsys, "list", *ws, "--format", "json")
    assert code == 0 and json.loads(out) == [] and "nothing remembered" in err
    seed(repo, "x")
    for args in (
        ("show", "abc"),
        ("show", "0"),
        ("frobnicate",),
        (),
        ("show", "99"),
        ("forget", "99"),
        ("undo", "1"),
        ("reembed",),
        ("list", "--limit", "-3"),
    ):
        code, out, err = cli(capsys, *args, *ws)
        assert code == 1, args
        assert out == "" and ("error" in err or "driveros" in err), (args, err)
    bad = tmp_path / "bad.json"
    bad.write_text('{"nope": 1}')
    code, _, err = cli(capsys, "import", str(bad), *ws)
    assert code == 1 and "not a driveros memory export" in err
    assert "Traceback" not in err


def test_cli_reembed_switches_the_pinned_model(
    tmp_path: Path, capsys: Cap, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo(tmp_path / "repo")
    seed(repo, "the service stores rows in SQLite")
    ws = ("--workspace", str(repo))
    with EmbeddingServer() as server:
        monkeypatch.setenv("OLLAMA_HOST", server.base_url.removesuffix("/v1"))
        code, out, _ = cli(capsys, "reembed", "--model", "ollama:embed-a", *ws)
        assert code == 0 and out == "re-embedded 1 fact with ollama:embed-a\n"
        monkeypatch.setenv("MNEME_EMBED_MODEL", "ollama:embed-a")
        code, out, _ = cli(capsys, "search", "which database", *ws)
        assert code == 0 and "SQLite" in out
        monkeypatch.setenv("MNEME_EMBED_MODEL", "ollama:embed-b")
        code, out, err = cli(capsys, "search", "which database", *ws)
        assert code == 1 and out == ""
        assert "ollama:embed-a" in err and "ollama:embed-b" in err and "reembed" in err
