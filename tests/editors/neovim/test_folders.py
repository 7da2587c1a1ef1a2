"""More than one folder in a real Neovim against the real driveros-lsp and the scripted model:
the folder question goes through Neovim's own ``window/showMessageRequest`` handler
(``vim.ui.select``, answered with the second folder), and a task naming two folders proposes
files in both."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.editors._model import DRIVEROS_LSP, model_env, model_server, write_turn
from tests.editors.neovim._nvim import run_nvim, why


@pytest.fixture
def folders(tmp_path: Path) -> tuple[Path, Path]:
    repo, second = tmp_path / "repo", tmp_path / "second"
    repo.mkdir()
    second.mkdir()
    (repo / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    return repo, second.resolve()


@pytest.fixture
def scripted_model(tmp_path: Path, folders: tuple[Path, Path]) -> Iterator[str]:
    _, second = folders
    script = [
        write_turn("here.txt", "here\n"),
        {"text": "written where asked"},
        write_turn("main.txt", "main\n"),
        write_turn(str(second / "lib.txt"), "lib\n"),
        {"text": "written in both"},
    ]
    with model_server(script, tmp_path / "script.json") as url:
        yield url


def test_neovim_a_task_asks_which_folder_or_names_both(
    folders: tuple[Path, Path], scripted_model: str
) -> None:
    repo, second = folders
    out = run_nvim(
        "folders.lua",
        cwd=repo,
        env={"DRIVEROS_LSP": str(DRIVEROS_LSP), "SECOND": str(second), **model_env(scripted_model)},
        timeout=180,
    )
    assert "error" not in out, why(out)
    [question] = out["asked"]
    # each folder by the name the client gave it (Neovim names a folder by its path)
    assert question["titles"] == [str(repo), str(second), "All folders"]
    assert "which folder" in question["prompt"]
    assert out["asked_uris"] == [(second / "here.txt").as_uri()]
    assert out["named_uris"] == sorted(
        [(repo / "main.txt").as_uri(), (second / "lib.txt").as_uri()]
    )
