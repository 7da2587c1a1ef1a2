"""The harness's checks on extraction and consolidation answers, hostile ones included."""

from __future__ import annotations

import json

import pytest

from driveros.memory._decide import (
    DecisionError,
    Plan,
    parse_extraction,
    parse_json_object,
    plan_decisions,
)

EXISTING = [(10, "module path is example.com/demo"), (11, "tests run with go test")]
NEW = ["module path is example.com/renamed", "the project builds with make"]


def decide(*decisions: dict[str, object]) -> str:
    return json.dumps({"decisions": list(decisions)})


def test_parse_json_object_tolerates_fences_and_prose() -> None:
    assert parse_json_object('Sure!\n```json\n{"facts": ["a"]}\n```\nDone.') == {"facts": ["a"]}
    assert parse_json_object('Here: {"facts": []} ok') == {"facts": []}
    assert parse_json_object('```\n{"a": {"b": 1}}\n```') == {"a": {"b": 1}}
    with pytest.raises(DecisionError):
        parse_json_object("no json here {oops")


def test_parse_extraction_dedupes_trims_and_drops_non_strings() -> None:
    text = json.dumps({"facts": ["  go.mod  declares x. ", "go.mod declares x", 3, None, ""]})
    assert parse_extraction(text) == ["go.mod declares x."]
    with pytest.raises(DecisionError, match="facts"):
        parse_extraction('{"fact": "x"}')


def test_plan_applies_valid_decisions() -> None:
    answer = decide(
        {"fact": "N1", "action": "UPDATE", "target": "E1"},
        {"fact": "N2", "action": "ADD"},
        {"action": "DELETE", "target": "E2", "reason": "go test is gone"},
    )
    assert plan_decisions(answer, EXISTING, NEW) == Plan(
        adds=["the project builds with make"],
        updates=[(10, "module path is example.com/renamed")],
        retires=[(11, "go test is gone")],
    )


def test_plan_without_model_answer_adds_everything_new() -> None:
    assert plan_decisions(None, [], NEW) == Plan(adds=NEW)


@pytest.mark.parametrize(
    "answer",
    ["this is not json", '{"decisions": "ADD"}', "[]", '```json\n{"decisions": [\n```'],
)
def test_plan_invalid_answer_rejects_all_decisions_and_keeps_new_facts(answer: str) -> None:
    plan = plan_decisions(answer, EXISTING, NEW)
    assert plan.adds == NEW and plan.updates == [] and plan.retires == []
    assert plan.rejected and plan.rejected[0].startswith("all decisions")


def test_plan_rejects_unknown_and_invented_ids() -> None:
    answer = decide(
        {"fact": "N1", "action": "UPDATE", "target": "E9"},
        {"fact": "N7", "action": "ADD"},
        {"action": "DELETE", "target": "10"},
        {"action": "DELETE", "target": 11},
        {"fact": "N2", "action": "MERGE", "target": "E1"},
    )
    plan = plan_decisions(answer, EXISTING, NEW)
    assert plan.adds == NEW and plan.updates == [] and plan.retires == []
    assert len(plan.rejected) == 5


def test_plan_rejects_every_decision_on_a_duplicated_id() -> None:
    answer = decide(
        {"fact": "N1", "action": "UPDATE", "target": "E1"},
        {"fact": "N1", "action": "NONE", "target": "E2"},
        {"fact": "N2", "action": "UPDATE", "target": "E2"},
        {"action": "DELETE", "target": "E2"},
    )
    plan = plan_decisions(answer, EXISTING, NEW)
    # N1 decided twice, E2 touched three times: all refused, both new facts kept, E1/E2 kept.
    assert plan.adds == NEW and plan.updates == [] and plan.retires == []
    assert len(plan.rejected) == 4


def test_plan_delete_cannot_touch_a_new_fact() -> None:
    answer = decide(
        {"fact": "N1", "action": "ADD"},
        {"fact": "N1", "action": "DELETE"},
        {"action": "DELETE", "target": "N1"},
    )
    plan = plan_decisions(answer, EXISTING, NEW)
    assert "module path is example.com/renamed" in plan.adds and plan.retires == []


def test_plan_delete_of_the_fact_a_new_one_duplicates_keeps_the_new_one() -> None:
    # "N1 is already E1" plus "delete E1" would lose the knowledge in both: refused.
    answer = decide(
        {"fact": "N1", "action": "NONE", "target": "E1"},
        {"action": "DELETE", "target": "E1"},
    )
    plan = plan_decisions(answer, EXISTING, NEW)
    assert plan.retires == [] and NEW[0] in plan.adds


def test_plan_never_adds_the_same_fact_twice() -> None:
    new = ["tests run with go test", "Tests run with go test."]
    assert plan_decisions(None, EXISTING, new) == Plan(unchanged=2)
    answer = decide({"fact": "N1", "action": "ADD"}, {"fact": "N2", "action": "ADD"})
    plan = plan_decisions(answer, [], ["uses make", "uses make."])
    assert plan.adds == ["uses make"] and plan.unchanged == 1


def test_plan_none_skips_and_unmentioned_new_facts_are_added() -> None:
    answer = decide({"fact": "n1", "action": "none", "target": "e1"})
    plan = plan_decisions(answer, EXISTING, NEW)
    assert plan.unchanged == 1 and plan.adds == ["the project builds with make"]
