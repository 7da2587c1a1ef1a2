"""Helpers shared by the dogfood subcommands (corpus location, provider specs)."""

from __future__ import annotations

from pathlib import Path

from driveros._git import run_git
from driveros.config import Environment
from driveros.evals import Corpus
from driveros.llm import Provider


async def default_corpus_path(env: Environment, explicit: Path | None) -> Path:
    """``--corpus``, else DRIVEROS_CORPUS, else ``.driveros/corpus.jsonl`` at the repo root."""
    if explicit is not None:
        return explicit
    if env.corpus_path:
        return Path(env.corpus_path)
    cwd = Path.cwd()
    try:
        code, out, _ = await run_git(cwd, "rev-parse", "--show-toplevel", timeout=10)
    except (OSError, TimeoutError):
        code, out = 1, ""
    root = Path(out.strip()) if code == 0 and out.strip() else cwd
    return root / ".driveros" / "corpus.jsonl"


async def open_corpus(env: Environment, explicit: Path | None) -> Corpus:
    return Corpus(await default_corpus_path(env, explicit))


def provider_from_spec(spec: str | None, env: Environment) -> Provider:
    """``provider[:model]`` (or None for the first configured provider)."""
    from driveros.agent import pick_provider
    from driveros.llm import provider_from_env

    name, _, model = (spec or "").partition(":")
    chosen = pick_provider(env, name or None)
    return provider_from_env(chosen, env, model=model or None)
