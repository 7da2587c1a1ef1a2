"""The council as a gate on the agent's own proposals (``driveros agent --council`` and the
language server's ``council`` setting): the diff goes to a critic and a referee from the
configured providers before a person sees it."""

from __future__ import annotations

from collections.abc import Sequence

from driveros.config import Environment
from driveros.council._council import review
from driveros.council._models import CouncilError, CouncilVerdict


async def review_proposal(
    diff: str,
    *,
    env: Environment,
    task: str = "",
    max_rounds: int = 1,
    exclude: Sequence[str] = (),
) -> CouncilVerdict:
    """Review a proposed diff with the configured providers (different ones by default).

    The agent's own provider is the author, so it is not asked to judge itself when another
    provider is configured: pass its name in ``exclude`` to seat others first.
    """
    if not diff.strip():
        raise CouncilError("there is no diff to review")
    from driveros.llm import Registry

    registry = await Registry.from_env(env, probe_ollama=False)
    try:
        names = registry.names()
        others = [registry.must_get(n) for n in names if n not in exclude]
        authors = [registry.must_get(n) for n in names if n in exclude]
        if not others and not authors:
            raise CouncilError("no provider is configured for the council")
        # The critic is the first provider that is not the author; the other non-authors
        # referee, then the critic itself; the author's provider only as the last fallback.
        critic = (others or authors)[0]
        referees = [*others[1:], critic, *[a for a in authors if a is not critic]]
        return await review(
            diff,
            critic=critic,
            referees=referees,
            kind="diff",
            context=f"The change was made by a coding agent for the task: {task}" if task else "",
            max_rounds=max_rounds,
        )
    finally:
        await registry.aclose()
