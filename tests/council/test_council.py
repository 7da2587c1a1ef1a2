"""The council over real providers talking to scripted models on loopback."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager

import pytest

from driveros.council import (
    CouncilError,
    StructuredOutputError,
    consult,
    extract_json_object,
    review,
    seat_council,
)
from driveros.llm import Provider, openaicompat
from driveros.testing import ScriptedError, ScriptedModelServer, Turn


@asynccontextmanager
async def seats(*scripts: Sequence[Turn]) -> AsyncIterator[list[Provider]]:
    """One scripted server and one OpenAI-compatible provider per seat."""
    async with AsyncExitStack() as stack:
        providers: list[Provider] = []
        for i, turns in enumerate(scripts):
            server = await stack.enter_async_context(ScriptedModelServer(turns))
            provider = openaicompat.openai(
                f"seat-{i}", base_url=server.openai_base_url, api_key="test-key"
            )
            stack.push_async_callback(provider.aclose)
            providers.append(provider)
        yield providers


def as_json(value: object) -> str:
    return json.dumps(value)


async def test_review_critic_author_referee_verdict() -> None:
    critic = [
        Turn(
            text=as_json(
                {
                    "summary": "one bug",
                    "issues": [
                        {"severity": "major", "description": "off by one", "evidence": "range(n+1)"}
                    ],
                }
            )
        ),
        Turn(text=as_json({"summary": "fine now", "issues": []})),
    ]
    author = [Turn(text="```json\n" + as_json({"response": "conceded, fixed"}) + "\n```")]
    referee = [
        Turn(
            text="Here you go: "
            + as_json(
                {
                    "verdict": "revise",
                    "summary": "fix the loop bound",
                    "issues": [{"severity": "major", "description": "off by one"}],
                }
            )
        )
    ]
    async with seats(author, critic, referee) as (a, c, r):
        verdict = await review("for i in range(n+1): ...", author=a, critic=c, referees=[r])
    assert verdict.verdict == "revise"
    assert verdict.referee == "openai:seat-2"
    assert [i.description for i in verdict.issues] == ["off by one"]
    assert len(verdict.rounds) == 2
    assert verdict.rounds[0].author_response == "conceded, fixed"
    assert verdict.rounds[0].issues[0].severity == "major"
    assert verdict.fallbacks == ()


async def test_review_failing_referee_falls_back() -> None:
    critic = [Turn(text=as_json({"summary": "ok", "issues": []}))]
    broken = [Turn(error=ScriptedError(status=400, message="model not found"))]
    good = [Turn(text=as_json({"verdict": "approve", "summary": "looks right", "issues": []}))]
    async with seats(critic, broken, good) as (c, r1, r2):
        verdict = await review("diff", critic=c, referees=[r1, r2])
    assert verdict.verdict == "approve"
    assert verdict.referee == "openai:seat-2"
    assert len(verdict.fallbacks) == 1
    assert "model not found" in verdict.fallbacks[0]


async def test_review_infrastructure_errors_are_errors_not_verdicts() -> None:
    critic = [Turn(text=as_json({"summary": "ok", "issues": []}))]
    garbage = [Turn(text="I think it is fine.")]  # no JSON verdict at all
    broken = [Turn(error=ScriptedError(status=401, message="bad key"))]
    async with seats(critic, garbage, broken) as (c, r1, r2):
        with pytest.raises(CouncilError, match="every referee failed"):
            await review("diff", critic=c, referees=[r1, r2])
    async with seats([Turn(error=ScriptedError(status=400, message="nope"))]) as (c,):
        with pytest.raises(CouncilError, match="critic"):
            await review("diff", critic=c, referees=[c])


async def test_consult_synthesizes_and_shows_disagreements() -> None:
    m1 = [Turn(text="Use a queue.")]
    m2 = [Turn(error=ScriptedError(status=400, message="unsupported"))]
    m3 = [Turn(text="Use a lock.")]
    ref = [
        Turn(
            text=as_json(
                {
                    "synthesis": "A queue avoids locking.",
                    "agreements": [],
                    "disagreements": ["seat-0 says queue, seat-2 says lock"],
                }
            )
        )
    ]
    async with seats(m1, m2, m3, ref) as (a, b, c, r):
        result = await consult("How to share work?", members=[a, b, c], referees=[r])
    assert result.synthesis == "A queue avoids locking."
    assert result.disagreements == ("seat-0 says queue, seat-2 says lock",)
    errors = {x.member: x.error for x in result.answers}
    assert errors["openai:seat-1"] is not None and "unsupported" in errors["openai:seat-1"]
    assert errors["openai:seat-0"] is None


async def test_seat_council_prefers_different_providers() -> None:
    async with seats([], [], []) as (a, b, c):
        author, critic, referees = seat_council([a, b, c])
        assert author is a and critic is b and referees == [c, b, a]
        author, critic, referees = seat_council([a])
        assert author is a and critic is a and referees == [a]
    with pytest.raises(CouncilError):
        seat_council([])


def test_extract_json_object_tolerates_prose_and_fences() -> None:
    assert extract_json_object('x {"a": 1} y') == {"a": 1}
    assert extract_json_object('```json\n{"b": [1, {"c": 2}]}\n```') == {"b": [1, {"c": 2}]}
    assert extract_json_object('{broken {"d": 3}') == {"d": 3}
    with pytest.raises(StructuredOutputError):
        extract_json_object("no json here")


async def test_review_proposal_seats_a_provider_other_than_the_author() -> None:
    from driveros.config import load_environment
    from driveros.council import review_proposal

    critic = [Turn(text=as_json({"summary": "fine", "issues": []}))]
    referee = [Turn(text=as_json({"verdict": "approve", "summary": "small and tested"}))]
    async with ScriptedModelServer(critic + referee) as other, ScriptedModelServer([]) as author:
        env = load_environment(
            environ={
                "ANTHROPIC_API_KEY": "k1",
                "ANTHROPIC_BASE_URL": author.anthropic_base_url,
                "OPENAI_API_KEY": "k2",
                "OPENAI_BASE_URL": other.openai_base_url,
            }
        )
        verdict = await review_proposal("+x = 1\n", env=env, task="set x", exclude=["anthropic"])
        assert author.requests == []  # the author never judged its own change
    assert verdict.verdict == "approve"
    assert verdict.referee.startswith("anthropic:") is False
    with pytest.raises(CouncilError, match="no diff"):
        await review_proposal("  ", env=env)
