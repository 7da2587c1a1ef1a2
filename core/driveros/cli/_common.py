"""Helpers shared by the dogfood subcommands (corpus location, provider specs)."""

from __future__ import annotations

from pathlib import Path

from driveros._errors import GitError
from driveros._git import run_git
from driveros.cli._options import ProviderSpec
from driveros.config import Environment
from driveros.evals import Corpus
from driveros.llm import Provider


async def _workspace_root() -> Path:
    """The repository's top level, else the working directory."""
    cwd = Path.cwd()
    try:
        done = await run_git(["rev-parse", "--show-toplevel"], cwd=cwd, check=False, timeout=10)
        out = done.text.strip() if done.returncode == 0 else ""
    except (GitError, TimeoutError):
        out = ""
    return Path(out) if out else cwd


async def default_corpus_path(env: Environment, explicit: Path | None) -> Path:
    """``--corpus``, else DRIVEROS_CORPUS, else ``.driveros/corpus.jsonl`` at the repo root."""
    if explicit is not None:
        return explicit
    if env.corpus_path:
        return Path(env.corpus_path)
    return await _workspace_root() / ".driveros" / "corpus.jsonl"


async def open_corpus(env: Environment, explicit: Path | None) -> Corpus:
    """The corpus; below the repository's top level no link is followed to reach it."""
    root = await _workspace_root()
    path = explicit or (Path(env.corpus_path) if env.corpus_path else None)
    path = path or root / ".driveros" / "corpus.jsonl"
    return Corpus(path, secrets=env.secret_values(), root=root)


def provider_from_spec(
    spec: ProviderSpec | None, env: Environment, *, model: str | None = None
) -> Provider:
    """``NAME[:MODEL]`` (None: the first configured provider); ``model`` wins over ``:MODEL``."""
    from driveros.llm import provider_from_env
    from driveros.runs import pick_provider

    chosen = pick_provider(env, spec.name if spec else None)
    return provider_from_env(chosen, env, model=model or (spec.model if spec else None))
