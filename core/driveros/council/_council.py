"""Adversarial review (author → critic → author response → referee) and consultation.

Infrastructure failures are never turned into verdicts: a failing critic raises
:class:`CouncilError`; a failing referee falls back to the next one, and only when every
referee failed does the review raise.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

from driveros._errors import DriverosError
from driveros.council import _prompts as prompts
from driveros.council._models import (
    ConsultResult,
    CouncilError,
    CouncilIssue,
    CouncilVerdict,
    MemberAnswer,
    Round,
)
from driveros.council._parse import extract_json_object
from driveros.llm import Provider, Request, system, user

log = logging.getLogger(__name__)

DEFAULT_CALL_TIMEOUT = 120.0


def seat_name(provider: Provider) -> str:
    return f"{provider.name}:{provider.model}"


async def _ask(provider: Provider, instructions: str, content: str, timeout: float) -> str:
    req = Request(messages=[system(instructions), user(content)], max_tokens=2000)
    async with asyncio.timeout(timeout):
        response = await provider.generate(req)
    return response.text()


async def _ask_json(
    provider: Provider, instructions: str, content: str, timeout: float
) -> dict[str, Any]:
    return extract_json_object(await _ask(provider, instructions, content, timeout))


def _issues(raw: Any) -> tuple[CouncilIssue, ...]:
    if not isinstance(raw, list):
        return ()
    out: list[CouncilIssue] = []
    for item in raw:
        if isinstance(item, dict):
            try:
                out.append(CouncilIssue.model_validate(item))
            except ValidationError:
                desc = str(item.get("description") or item)
                out.append(CouncilIssue(description=desc))
        elif isinstance(item, str):
            out.append(CouncilIssue(description=item))
    return tuple(out)


def _transcript(kind: str, artifact: str, rounds: Sequence[Round]) -> str:
    parts = [f"The {kind}:\n<<<\n{artifact}\n>>>"]
    for r in rounds:
        issues = json.dumps([i.model_dump() for i in r.issues], indent=1)
        parts.append(f"Round {r.number}, critic {r.critic}: {r.summary}\nIssues: {issues}")
        if r.author_response is not None:
            parts.append(f"Author's response: {r.author_response}")
    return "\n\n".join(parts)


async def review(
    artifact: str,
    *,
    critic: Provider,
    referees: Sequence[Provider],
    author: Provider | None = None,
    kind: str = "diff",
    context: str = "",
    max_rounds: int = 2,
    call_timeout: float = DEFAULT_CALL_TIMEOUT,
) -> CouncilVerdict:
    """Review ``artifact``; the first referee that answers decides."""
    if not referees:
        raise CouncilError("the council needs at least one referee")
    if max_rounds < 1:
        raise CouncilError("max_rounds must be at least 1", max_rounds=max_rounds)
    body = artifact if not context else f"Context: {context}\n\n{artifact}"
    rounds: list[Round] = []
    for number in range(1, max_rounds + 1):
        content = _transcript(kind, body, rounds)
        try:
            data = await _ask_json(critic, prompts.CRITIC.format(kind=kind), content, call_timeout)
        except (DriverosError, TimeoutError) as exc:
            raise CouncilError(
                f"critic {seat_name(critic)} failed: {exc or 'timed out'}", seat=seat_name(critic)
            ) from exc
        issues = _issues(data.get("issues"))
        this_round = Round(
            number=number,
            critic=seat_name(critic),
            summary=str(data.get("summary", "")),
            issues=issues,
        )
        if issues and author is not None:
            try:
                reply = await _ask_json(
                    author,
                    prompts.AUTHOR.format(kind=kind),
                    _transcript(kind, body, [*rounds, this_round]),
                    call_timeout,
                )
                response = str(reply.get("response", ""))
            except (DriverosError, TimeoutError) as exc:
                # The author's reply is optional: the referee decides without it.
                response = f"(the author could not respond: {exc or 'timed out'})"
            this_round = this_round.model_copy(update={"author_response": response})
        rounds.append(this_round)
        if not issues or author is None:
            break

    fallbacks: list[str] = []
    content = _transcript(kind, body, rounds)
    for referee in referees:
        try:
            data = await _ask_json(
                referee, prompts.REFEREE.format(kind=kind), content, call_timeout
            )
            verdict = str(data.get("verdict", "")).strip().lower()
            if verdict not in ("approve", "revise", "reject"):
                raise CouncilError(f"referee gave no valid verdict: {verdict!r}")
        except (DriverosError, TimeoutError) as exc:
            log.warning("referee %s failed: %s", seat_name(referee), exc)
            fallbacks.append(f"{seat_name(referee)}: {exc or 'timed out'}")
            continue
        return CouncilVerdict(
            verdict=verdict,
            summary=str(data.get("summary", "")),
            issues=_issues(data.get("issues")),
            rounds=tuple(rounds),
            referee=seat_name(referee),
            fallbacks=tuple(fallbacks),
        )
    raise CouncilError("every referee failed: " + "; ".join(fallbacks), fallbacks=tuple(fallbacks))


async def _member_answer(provider: Provider, question: str, timeout: float) -> MemberAnswer:
    started = time.perf_counter()
    try:
        text = await _ask(provider, prompts.MEMBER, question, timeout)
    except (DriverosError, TimeoutError) as exc:
        return MemberAnswer(
            member=seat_name(provider),
            error=str(exc) or "timed out",
            latency_ms=(time.perf_counter() - started) * 1000,
        )
    return MemberAnswer(
        member=seat_name(provider), answer=text, latency_ms=(time.perf_counter() - started) * 1000
    )


def _strings(raw: Any) -> tuple[str, ...]:
    return tuple(str(x) for x in raw) if isinstance(raw, list) else ()


async def consult(
    question: str,
    *,
    members: Sequence[Provider],
    referees: Sequence[Provider],
    call_timeout: float = DEFAULT_CALL_TIMEOUT,
) -> ConsultResult:
    """Every member answers concurrently; the first referee that answers synthesizes."""
    if not members or not referees:
        raise CouncilError("a consultation needs members and a referee")
    async with asyncio.TaskGroup() as tg:
        tasks = [tg.create_task(_member_answer(m, question, call_timeout)) for m in members]
    answers = tuple(t.result() for t in tasks)
    if all(a.error for a in answers):
        raise CouncilError(
            "every member failed: " + "; ".join(f"{a.member}: {a.error}" for a in answers)
        )
    content = f"Question:\n{question}\n\n" + "\n\n".join(
        f"Answer from {a.member}:\n{a.answer}" for a in answers if not a.error
    )
    fallbacks: list[str] = []
    for referee in referees:
        try:
            data = await _ask_json(referee, prompts.SYNTHESIS, content, call_timeout)
            synthesis = str(data.get("synthesis", "")).strip()
            if not synthesis:
                raise CouncilError("referee gave an empty synthesis")
        except (DriverosError, TimeoutError) as exc:
            fallbacks.append(f"{seat_name(referee)}: {exc or 'timed out'}")
            continue
        return ConsultResult(
            question=question,
            answers=answers,
            synthesis=synthesis,
            agreements=_strings(data.get("agreements")),
            disagreements=_strings(data.get("disagreements")),
            referee=seat_name(referee),
            fallbacks=tuple(fallbacks),
        )
    raise CouncilError("every referee failed: " + "; ".join(fallbacks))


def seat_council(providers: Sequence[Provider]) -> tuple[Provider, Provider, list[Provider]]:
    """(author, critic, referees) from configured providers, different providers by default.

    With one provider every seat is that provider; with two, the critic differs from the
    author and the referees are the remaining ones followed by the author as a fallback.
    """
    if not providers:
        raise CouncilError("no provider is configured for the council")
    author = providers[0]
    critic = providers[1] if len(providers) > 1 else providers[0]
    rest = list(providers[2:])
    referees = [*rest, critic, author] if rest else [critic, author]
    unique: list[Provider] = []
    for p in referees:
        if all(p is not q for q in unique):
            unique.append(p)
    return author, critic, unique
