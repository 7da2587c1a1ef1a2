"""Random JSON arguments for every agent tool: an error result the model can read, never an
exception, and a ``tool_result`` event that always serializes."""

from __future__ import annotations

import asyncio
import json
import string
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from driveros.agent import TOOL_NAMES, ToolResult
from driveros.agent._tools import ToolBox
from driveros.sandbox import LocalSandbox

#: Text a model may send: printable, odd Unicode, and lone surrogates (JSON ``\udcff``).
TEXT = st.text(
    st.one_of(
        st.sampled_from(string.printable),
        st.characters(blacklist_categories=("Cs",)),
        st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF),
    ),
    max_size=40,
)
SCALAR = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True), TEXT)
JSON = st.recursive(
    SCALAR,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(TEXT, inner, max_size=3)),
    max_leaves=8,
)
#: Paths that stay inside the workspace when written (reads may aim anywhere: the fence
#: answers those).
SAFE_PATH = TEXT.filter(lambda p: ".." not in p and not p.startswith(("/", "~")) and p.strip())
ANY_PATH = st.one_of(TEXT, st.sampled_from(["/etc/passwd", "../x", "a/../../b", ".", "", "~"]))


def _args_for(name: str) -> st.SearchStrategy[dict[str, Any]]:
    """Mostly well-shaped arguments with hostile values, plus arbitrary objects."""
    shaped: dict[str, st.SearchStrategy[dict[str, Any]]] = {
        # commands are never random text: only a harmless one, with random timeouts
        "run": st.fixed_dictionaries(
            {"command": st.sampled_from(["true", "echo hi", ""])},
            optional={"timeout": SCALAR},
        ),
        "read_file": st.fixed_dictionaries(
            {"path": ANY_PATH}, optional={"offset": SCALAR, "limit": SCALAR}
        ),
        "write_file": st.fixed_dictionaries({"path": SAFE_PATH, "content": TEXT}),
        "edit_file": st.fixed_dictionaries(
            {"path": SAFE_PATH, "old_string": TEXT, "new_string": TEXT},
            optional={"replace_all": SCALAR},
        ),
        "search": st.fixed_dictionaries(
            {"pattern": TEXT}, optional={"path": ANY_PATH, "glob": TEXT}
        ),
        "list_files": st.fixed_dictionaries({}, optional={"path": ANY_PATH}),
        "diagnostics": st.just({}),
    }
    wild = st.dictionaries(TEXT, JSON, max_size=4)
    if name == "run":  # an arbitrary object never has a runnable "command"
        wild = wild.filter(lambda d: "command" not in d)
    return st.one_of(shaped.get(name, wild), wild)


CALL = st.sampled_from([*TOOL_NAMES, "rm_rf", "", "read_file\udcff"]).flatmap(
    lambda name: st.tuples(st.just(name), _args_for(name), st.one_of(st.none(), TEXT))
)


@settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(calls=st.lists(CALL, min_size=1, max_size=4))
def test_tool_dispatch_answers_every_call(tmp_path: Path, calls: list[Any]) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    (workspace / "calc.py").write_text("def add(a, b):\n    return a - b\n")

    async def go() -> None:
        async with LocalSandbox(workspace) as sandbox:
            box = ToolBox(sandbox, default_timeout=10)
            for name, arguments, raw in calls:
                outcome = await box.call(name, arguments, raw)
                assert isinstance(outcome.ok, bool) and isinstance(outcome.output, str)
                if raw is not None or name not in TOOL_NAMES:
                    assert not outcome.ok and outcome.output.startswith("error: ")
                event = ToolResult(
                    run_id="r",
                    turn=1,
                    call_id="c",
                    name=name,
                    ok=outcome.ok,
                    output=outcome.output,
                )
                assert json.loads(event.model_dump_json())["ok"] == outcome.ok

    asyncio.run(go())
