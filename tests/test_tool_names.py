"""One tool vocabulary (driveros._tool_names): every layer uses the same names and sets."""

from __future__ import annotations

from driveros import _tool_names as names
from driveros import approval
from driveros.acp._updates import tool_kind
from driveros.agent import READ_ONLY_TOOLS as AGENT_READ_ONLY
from driveros.agent import TOOL_NAMES as AGENT_TOOL_NAMES
from driveros.agent import tool_specs


def test_tool_names_partition_into_read_edit_and_run() -> None:
    read, edit = names.READ_ONLY_TOOLS, names.EDIT_TOOLS
    assert not read & edit
    assert names.RUN_TOOL not in read | edit
    assert set(names.TOOL_NAMES) == read | edit | {names.RUN_TOOL}
    assert len(names.TOOL_NAMES) == len(set(names.TOOL_NAMES))


def test_tool_names_the_model_is_shown_are_the_vocabulary() -> None:
    assert tuple(spec.name for spec in tool_specs()) == names.TOOL_NAMES


def test_tool_names_every_layer_uses_the_one_definition() -> None:
    assert AGENT_TOOL_NAMES is names.TOOL_NAMES
    assert AGENT_READ_ONLY is names.READ_ONLY_TOOLS
    assert approval.READ_ONLY_TOOLS is names.READ_ONLY_TOOLS
    assert approval.EDIT_TOOLS is names.EDIT_TOOLS
    assert approval.RUN_TOOL == names.RUN_TOOL


def test_tool_names_each_has_an_acp_kind() -> None:
    kinds = {name: tool_kind(name) for name in names.TOOL_NAMES}
    assert kinds[names.RUN_TOOL] == "execute"
    assert {kinds[name] for name in names.EDIT_TOOLS} == {"edit"}
    assert {kinds[name] for name in names.READ_ONLY_TOOLS} <= {"read", "search"}
