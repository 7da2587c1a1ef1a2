"""The council's review of a proposal (setting ``council``): critic, author and referee models
from every configured provider judge the diff before the user sees it."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from driveros.config import Environment

logger = logging.getLogger(__name__)


async def council_review(env: Environment, *, diff: str, task: str) -> dict[str, Any]:
    """``{verdict, summary, issues, referee}``, or ``{"error": ...}`` when no verdict came."""
    from driveros import DriverosError
    from driveros.council import review, seat_council
    from driveros.llm import Registry

    try:
        async with await Registry.from_env(env, probe_ollama=False) as registry:
            providers = [registry.must_get(name) for name in registry.names()]
            author, critic, referees = seat_council(providers)
            verdict = await review(
                diff, critic=critic, referees=referees, author=author, kind="diff", context=task
            )
    except DriverosError as exc:  # the proposal stands without a verdict
        logger.warning("council review failed: %s", exc)
        return {"error": str(exc)}
    return {
        "verdict": verdict.verdict,
        "summary": verdict.summary,
        "issues": [issue.model_dump(mode="json") for issue in verdict.issues],
        "referee": verdict.referee,
    }
