"""Extraction and consolidation prompts, and the harness-side checks on the model's answers.

The model never sees a database id. Existing facts are shown as ``E1..En`` and new facts as
``N1..Nm``; the harness maps them back. Rules that make the known failure modes impossible:

- a decision may only name ids that were shown (an invented id is rejected);
- each new fact gets at most one decision and each existing fact is touched at most once; any
  conflict rejects every decision involved (no "first one wins");
- ``DELETE`` only accepts an existing id, so no decision can retire a new fact, and a new fact
  is always written as its own row (an update supersedes the old row, never overwrites it);
- a new fact the model did not decide on, or whose decision was rejected, is added: a verified
  fact is never lost to a bad answer. An exact repeat of an active fact is never added twice.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from driveros.llm import Message, TextPart, ToolCallPart, ToolResultPart

MAX_FACTS = 20
MAX_FACT_CHARS = 400
_TOOL_OUTPUT_CHARS = 2000
_TRANSCRIPT_CHARS = 24000

EXTRACT_SYSTEM = """\
You maintain the long-term memory of a coding agent for one repository.
From the run below, extract durable facts about the repository that a TOOL RESULT in this run
showed to be true (file contents, command output, project layout, build and test commands,
configuration values). Each fact is one self-contained sentence naming where it was observed,
e.g. "go.mod declares the module path example.com/demo".
Do not include: facts only claimed in recalled memory or by the user, guesses, plans, the task
itself, transient state (timings, temporary files), secrets or credentials.
Answer with JSON only: {"facts": ["...", "..."]}. Use {"facts": []} when nothing qualifies."""

CONSOLIDATE_SYSTEM = """\
You reconcile new facts about a repository with the facts already remembered.
EXISTING facts have ids E1, E2, ...; NEW facts (just verified with tools) have ids N1, N2, ...
Give one decision per NEW fact:
  {"fact": "N1", "action": "ADD"}                  new information
  {"fact": "N1", "action": "UPDATE", "target": "E2"} N1 replaces E2 (E2 is outdated or wrong)
  {"fact": "N1", "action": "NONE", "target": "E2"}   E2 already says the same thing
and, for an EXISTING fact the new facts show to be false with no single replacement:
  {"action": "DELETE", "target": "E3", "reason": "..."}
Prefer the NEW facts when they conflict: they were just observed. Use only the ids shown.
Answer with JSON only: {"decisions": [...]}"""


class DecisionError(ValueError):
    """The model's answer could not be used (not JSON, wrong shape)."""


def parse_json_object(text: str) -> dict[str, Any]:
    """The first JSON object in ``text``: tolerates code fences and prose around it."""
    fenced = re.findall(r"```(?:json|JSON)?\s*(.*?)```", text, flags=re.DOTALL)
    candidates = [*fenced, text]
    decoder = json.JSONDecoder()
    for candidate in candidates:
        for match in re.finditer(r"\{", candidate):
            try:
                value, _ = decoder.raw_decode(candidate, match.start())
            except ValueError:
                continue
            if isinstance(value, dict):
                return value
    raise DecisionError(f"no JSON object in the model's answer: {text[:200]!r}")


def parse_extraction(text: str) -> list[str]:
    """The facts of an extraction answer: strings only, trimmed, deduplicated, bounded."""
    data = parse_json_object(text)
    raw = data.get("facts")
    if not isinstance(raw, list):
        raise DecisionError('the extraction answer has no "facts" list')
    facts: list[str] = []
    seen: set[str] = set()
    for item in raw:
        if not isinstance(item, str):
            continue
        fact = " ".join(item.split())
        key = fact.lower().rstrip(".")
        if not fact or key in seen:
            continue
        seen.add(key)
        facts.append(fact[:MAX_FACT_CHARS])
        if len(facts) >= MAX_FACTS:
            break
    return facts


def render_transcript(task: str, answer: str, transcript: Sequence[Message]) -> str:
    """The run as the extractor reads it; system prompts (and the recalled memory) left out."""
    lines = [f"TASK: {task}"]
    for msg in transcript:
        if msg.role == "system":
            continue
        for part in msg.parts:
            if isinstance(part, TextPart) and part.text.strip():
                lines.append(f"{msg.role.upper()}: {part.text.strip()}")
            elif isinstance(part, ToolCallPart):
                args = json.dumps(part.arguments, sort_keys=True)[:300]
                lines.append(f"TOOL CALL {part.name} {args}")
            elif isinstance(part, ToolResultPart):
                body = part.content[:_TOOL_OUTPUT_CHARS]
                tag = "TOOL ERROR" if part.is_error else "TOOL RESULT"
                lines.append(f"{tag} {part.name}:\n{body}")
    lines.append(f"FINAL ANSWER: {answer.strip()}")
    text = "\n".join(lines)
    if len(text) > _TRANSCRIPT_CHARS:
        half = _TRANSCRIPT_CHARS // 2
        text = text[:half] + "\n[... middle of the run omitted ...]\n" + text[-half:]
    return text


def observed_state(transcript: Sequence[Message]) -> bool:
    """True when some tool returned a non-error result in this run."""
    return any(
        isinstance(p, ToolResultPart) and not p.is_error for m in transcript for p in m.parts
    )


def consolidation_prompt(existing: Sequence[str], new: Sequence[str]) -> str:
    lines = ["EXISTING:"]
    lines += [f"E{i} {text}" for i, text in enumerate(existing, 1)] or ["(none)"]
    lines.append("NEW:")
    lines += [f"N{i} {text}" for i, text in enumerate(new, 1)]
    return "\n".join(lines)


@dataclass
class Plan:
    """What the harness will write, in terms of database ids and new fact texts."""

    adds: list[str] = field(default_factory=list)
    updates: list[tuple[int, str]] = field(default_factory=list)
    retires: list[tuple[int, str]] = field(default_factory=list)
    unchanged: int = 0
    rejected: list[str] = field(default_factory=list)


def _ids(value: Any, prefix: str, size: int) -> int | None:
    """``"E3"`` → 2 (index), when shown to the model; None otherwise."""
    if not isinstance(value, str):
        return None
    m = re.fullmatch(rf"\s*{prefix}(\d+)\s*", value, flags=re.IGNORECASE)
    if not m:
        return None
    index = int(m.group(1)) - 1
    return index if 0 <= index < size else None


def plan_decisions(
    answer: str | None, existing: Sequence[tuple[int, str]], new: Sequence[str]
) -> Plan:
    """Validate the model's decisions and turn them into a :class:`Plan` (see module docs).

    ``answer`` None means no model call was needed (nothing related): every new fact is added.
    """
    plan = Plan()
    per_new: dict[int, tuple[str, int | None]] = {}
    deletes: dict[int, str] = {}
    if answer is not None:
        try:
            decisions = _read_decisions(answer)
        except DecisionError as exc:
            plan.rejected.append(f"all decisions: {exc}")
            decisions = []
        per_new, deletes = _check(decisions, len(existing), len(new), plan.rejected)
    known = {" ".join(t.lower().split()).rstrip(".") for _, t in existing}
    for n_index, text in enumerate(new):
        action, target = per_new.get(n_index, ("ADD", None))
        key = " ".join(text.lower().split()).rstrip(".")
        if action == "NONE" or (action == "ADD" and key in known):
            plan.unchanged += 1
        elif action == "UPDATE" and target is not None:
            plan.updates.append((existing[target][0], text))
        else:
            plan.adds.append(text)
        known.add(key)
    plan.retires = [
        (existing[e][0], reason or "contradicted by newly verified facts")
        for e, reason in sorted(deletes.items())
    ]
    return plan


def _read_decisions(answer: str) -> list[dict[str, Any]]:
    data = parse_json_object(answer)
    raw = data.get("decisions")
    if not isinstance(raw, list):
        raise DecisionError('the answer has no "decisions" list')
    return [d for d in raw if isinstance(d, dict)]


def _check(
    decisions: Sequence[dict[str, Any]], n_existing: int, n_new: int, rejected: list[str]
) -> tuple[dict[int, tuple[str, int | None]], dict[int, str]]:
    """Valid decisions: ``({new index: (action, existing index)}, {existing index: reason})``."""
    valid: list[tuple[int | None, str, int | None, str]] = []
    for d in decisions:
        action = str(d.get("action", "")).strip().upper()
        has_fact, has_target = d.get("fact") is not None, d.get("target") is not None
        fact = _ids(d.get("fact"), "N", n_new)
        target = _ids(d.get("target"), "E", n_existing)
        reason = str(d.get("reason", ""))[:200]
        shown = json.dumps(d, sort_keys=True)[:160]
        if action not in {"ADD", "UPDATE", "NONE", "DELETE"}:
            rejected.append(f"unknown action: {shown}")
        elif (has_fact and fact is None) or (has_target and target is None):
            rejected.append(f"unknown id: {shown}")
        elif action == "DELETE" and (has_fact or target is None):
            rejected.append(f"DELETE must name one existing fact only: {shown}")
        elif action != "DELETE" and fact is None:
            rejected.append(f"{action} must name a new fact: {shown}")
        elif action == "ADD" and has_target:
            rejected.append(f"ADD takes no target: {shown}")
        elif action == "UPDATE" and target is None:
            rejected.append(f"UPDATE needs a target: {shown}")
        else:
            valid.append((fact, action, target, reason))
    # Conflicts: a new fact decided twice, or an existing fact touched by two decisions.
    fact_uses: dict[int, int] = {}
    target_uses: dict[int, int] = {}
    for fact, _, target, _ in valid:
        if fact is not None:
            fact_uses[fact] = fact_uses.get(fact, 0) + 1
        if target is not None:
            target_uses[target] = target_uses.get(target, 0) + 1
    per_new: dict[int, tuple[str, int | None]] = {}
    deletes: dict[int, str] = {}
    for fact, action, target, reason in valid:
        if (fact is not None and fact_uses[fact] > 1) or (
            target is not None and target_uses[target] > 1
        ):
            who = f"N{fact + 1}" if fact is not None else f"E{(target or 0) + 1}"
            rejected.append(f"conflicting decisions on {who}: {action}")
        elif action == "DELETE" and target is not None:
            deletes[target] = reason
        elif fact is not None:
            per_new[fact] = (action, target)
    return per_new, deletes
