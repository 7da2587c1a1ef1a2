"""The council's review of a proposal (setting ``council``): models from the configured
providers judge the diff before the user sees it."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from driveros.config import Environment

logger = logging.getLogger(__name__)


async def council_review(
    env: Environment, *, diff: str, task: str, author: str | None = None
) -> dict[str, Any]:
    """``{verdict, summary, issues, referee}``, or ``{"error": ...}`` when no verdict came.

    ``author`` names the run's provider, so other providers judge first (see
    ``driveros.council.review_proposal``)."""
    from driveros import DriverosError
    from driveros.council import review_proposal

    try:
        verdict = await review_proposal(
            diff, env=env, task=task, exclude=[author] if author else ()
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
