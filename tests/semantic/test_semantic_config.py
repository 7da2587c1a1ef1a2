"""Which language servers exist: the user's `[language_servers.NAME]` tables and `driveros
doctor`'s checks; a user's server is used by the tools (a real one: basedpyright under
another name)."""

from __future__ import annotations

from pathlib import Path

from tests.cli.test_doctor import as_json, check, doctor
from tests.semantic._oracle import places, program

from driveros.sandbox import LocalSandbox
from driveros.semantic import SemanticTools, load_user_servers, merge_servers, server_mounts

USER = """
[language_servers.mypyls]
command = ["basedpyright-langserver", "--stdio"]
filetypes = ["py"]
language_id = "python"

[language_servers.broken]
command = 3
"""


def test_semantic_user_servers_come_first_and_bad_tables_are_skipped(tmp_path: Path) -> None:
    (tmp_path / "driveros").mkdir()
    (tmp_path / "driveros/language-servers.toml").write_text(USER)
    found = load_user_servers({"XDG_CONFIG_HOME": str(tmp_path), "HOME": str(tmp_path)})
    assert [s.name for s in found] == ["mypyls"]
    assert found[0].language_id("a.py") == "python"
    merged = merge_servers(found)
    assert [s.name for s in merged] == [
        "mypyls",
        "basedpyright",
        "typescript-language-server",
        "gopls",
    ]


async def test_semantic_a_user_server_answers_for_its_files(tmp_path: Path) -> None:
    program("basedpyright")
    (tmp_path / "driveros").mkdir()
    (tmp_path / "driveros/language-servers.toml").write_text(USER)
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.py").write_text("def f():\n    return 1\n\n\nf()\n")
    async with LocalSandbox(ws, read_only=server_mounts()) as sandbox:
        tools = SemanticTools(sandbox, environ={"XDG_CONFIG_HOME": str(tmp_path)})
        got = await tools.references("a.py", 5, 1, None)
        assert places(got.text) == [("a.py", 1, 5), ("a.py", 5, 1)]
        assert list(tools.sessions) == ["mypyls"]
        await tools.aclose()


def test_semantic_doctor_lists_the_language_servers(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    report = as_json(
        doctor(ws, "--format", "json", PATH="/usr/bin:/bin", XDG_CACHE_HOME=str(tmp_path / "c"))
    )
    servers = {f["server"]: f for f in report["facts"]["build"]["language_servers"]}
    assert set(servers) == {"basedpyright", "typescript-language-server", "gopls"}
    ts = check(report, "build", "language server typescript-language-server")
    assert ts["status"] == "warning" and "npm install typescript-language-server" in ts["fix"]
    assert not servers["typescript-language-server"]["found"]
