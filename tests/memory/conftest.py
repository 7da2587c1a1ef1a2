"""Fixtures for memory tests: real SQLite files in tmp dirs, git repos, loopback models."""

from __future__ import annotations

import subprocess
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from driveros.memory import MemoryStore, OpenAICompatEmbedder
from tests.memory._embedserver import EmbeddingServer


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(cwd), *args], check=True, capture_output=True, text=True
    ).stdout.strip()


def make_repo(path: Path, *, remote: str | None = None) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "user.email", "t@example.com")
    git(path, "config", "user.name", "t")
    (path / "go.mod").write_text("module example.com/demo\n\ngo 1.22\n")
    git(path, "add", "go.mod")
    git(path, "commit", "-q", "-m", "init")
    if remote:
        git(path, "remote", "add", "origin", remote)
    return path


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[MemoryStore]:
    s = await MemoryStore.open(tmp_path / "mem.db", scope="test:scope")
    try:
        yield s
    finally:
        await s.aclose()


@pytest.fixture
def embed_server() -> Iterator[EmbeddingServer]:
    with EmbeddingServer() as server:
        yield server


def embedder(server: EmbeddingServer, model: str = "embed-a") -> OpenAICompatEmbedder:
    return OpenAICompatEmbedder(model, spec=f"ollama:{model}", base_url=server.base_url)
