"""Positions on the wire in the negotiated encoding (utf-16, utf-8, utf-32), end to end.

A line with é, CJK and 😀 (1 code point; 2 UTF-16 units; 4 UTF-8 bytes) before the column:
the diagnostic the editor receives, the fix task built from the editor's diagnostic and the
proposal's WorkspaceEdit must all mean the same characters in whichever encoding was chosen.
Ranges are resolved by an LSP-conformant applier (tests/server/_lsp.py), not by the server's
own codec.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lsprotocol import types as lsp

from driveros.testing import ToolCallSpec, Turn
from driveros_lsp import protocol
from driveros_lsp._text import Pos, PositionCodec, line_hunks, split_lines
from tests.server._lsp import apply_text_edits, editor_session, offset_of
from tests.server.conftest import model_env
from tests.server.test_flow import SETTINGS

ENCODINGS = ["utf-16", "utf-8", "utf-32"]
#: What each client offers in ``general.positionEncodings`` -> what the server must choose.
OFFERS: dict[str, tuple[list[str] | None, str]] = {
    "utf-16 only": (["utf-16"], "utf-16"),
    "nothing said": (None, "utf-16"),
    "utf-8 preferred": (["utf-8", "utf-16"], "utf-8"),
    "utf-32": (["utf-32", "utf-16"], "utf-32"),
}
LINE = 's = "é中😀"; import os\n'
UNICODE_FILE = "# header 😀\n" + LINE + "print(os)\n"


def capabilities(offer: list[str] | None) -> lsp.ClientCapabilities:
    from pytest_lsp import client_capabilities

    caps = client_capabilities("visual-studio-code@v1.65.2")
    caps.general = lsp.GeneralClientCapabilities(
        position_encodings=[lsp.PositionEncodingKind(e) for e in offer] if offer else None
    )
    return caps


def edit_turns(path: str, old: str, new: str) -> list[Turn]:
    """The scripted model: one edit, then an answer."""
    edit = {"path": path, "old_string": old, "new_string": new}
    return [Turn(tool_calls=[ToolCallSpec("edit_file", edit)]), Turn(text="done")]


def marked(text: str, rng: lsp.Range, encoding: str) -> str:
    """The text an LSP-conformant editor marks for ``rng``."""
    return text[offset_of(text, rng.start, encoding) : offset_of(text, rng.end, encoding)]


# -- the codec, against an independent oracle ---------------------------------------------

lines_text = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40
).map(lambda s: s.replace("\r", "").replace("\n", ""))


def _units(text: str, encoding: str) -> int:
    if encoding == "utf-8":
        return len(text.encode("utf-8"))
    return len(text.encode(f"{encoding}-le")) // (2 if encoding == "utf-16" else 4)


@given(line=lines_text, data=st.data())
def test_codec_round_trips_every_character_boundary(line: str, data: Any) -> None:
    for encoding in ENCODINGS:
        codec = PositionCodec(encoding)  # type: ignore[arg-type]
        index = data.draw(st.integers(0, len(line)))
        units = codec.to_client(line, index)
        assert units == _units(line[:index], encoding)
        assert codec.from_client(line, units) == index
        # past the end: the line's end (LSP "defaults back to the line length")
        assert codec.from_client(line, units + 10**6) == len(line)


def test_codec_inside_a_character_is_its_end() -> None:
    assert PositionCodec("utf-16").from_client("a😀b", 2) == 2  # half a surrogate pair
    assert PositionCodec("utf-8").from_client("aéb", 2) == 2  # inside é's two bytes
    assert PositionCodec("utf-8").from_client(None, 7) == 7  # unknown text: as given


# -- diagnostics: a real session, a real check (ruff), every encoding ---------------------


@pytest.mark.parametrize("offer", list(OFFERS))
async def test_published_diagnostic_marks_the_same_characters(
    workspace: Path, scripted_model: Any, offer: str
) -> None:
    """The agent drops the only use of ``os``: ruff reports F401 at ``os``, in code points,
    after é, 中 and 😀; the editor must mark exactly ``os`` whatever the encoding."""
    (workspace / "uni.py").write_text(UNICODE_FILE, encoding="utf-8")
    # the project uses ruff (an unconfigured linter reports only errors: docs/intel.md)
    (workspace / "ruff.toml").write_text('[lint]\nselect = ["F"]\n', encoding="utf-8")
    offered, expected = OFFERS[offer]
    turns = edit_turns("uni.py", "print(os)\n", "")
    async with (
        scripted_model(turns) as model,
        editor_session(
            workspace,
            env=model_env(model),
            settings=SETTINGS,
            capabilities=capabilities(offered),
        ) as ed,
    ):
        assert ed.encoding == expected
        uri = ed.uri("uni.py")

        def marks() -> dict[str, str]:
            got: dict[str, str] = {}
            for params in ed.published:
                if params.uri == uri:
                    for d in params.diagnostics:
                        got[str(d.code)] = marked(UNICODE_FILE, d.range, ed.encoding)
            return got

        await ed.command(protocol.CMD_AGENT_START, {"task": "tidy"})
        found = await ed.wait_for(
            lambda: (m := marks()) and "F401" in m and m, what="ruff's new item"
        )
        assert found["F401"] == "os"


# -- the fix task: the editor's range back to the item's code points ----------------------


@pytest.mark.parametrize("offer", ["utf-16 only", "utf-8 preferred", "utf-32"])
async def test_fix_task_names_the_column_the_editor_marked(
    workspace: Path, scripted_model: Any, offer: str
) -> None:
    (workspace / "uni.py").write_text(UNICODE_FILE, encoding="utf-8")
    offered, _ = OFFERS[offer]
    async with (
        scripted_model([Turn(text="looked")]) as model,
        editor_session(
            workspace, env=model_env(model), settings=SETTINGS, capabilities=capabilities(offered)
        ) as ed,
    ):
        ed.open("uni.py")
        codec = PositionCodec(ed.encoding)  # type: ignore[arg-type]
        line = LINE.rstrip("\n")
        col = line.index("os")
        diag = lsp.Diagnostic(
            range=lsp.Range(
                start=lsp.Position(line=1, character=codec.to_client(line, col)),
                end=lsp.Position(line=1, character=codec.to_client(line, col + 2)),
            ),
            message="`os` imported but unused",
            source="ruff",
            code="F401",
        )
        assert marked(UNICODE_FILE, diag.range, ed.encoding) == "os"
        actions = await ed.code_actions("uni.py", [diag])
        command = actions[0].command
        assert command is not None
        result = await ed.command(command.command, *(command.arguments or []))
        run_id = result["runId"]
        started = await ed.wait_for(
            lambda: ed.events(run_id, "run_started"), what="the run's start"
        )
        # 1-based code points: the task says column 16 whatever the encoding
        assert f"uni.py:2:{col + 1}:" in started[0]["task"]


# -- proposals: the WorkspaceEdit rebuilds exactly the new text ---------------------------

line_pieces = st.lists(
    st.tuples(
        st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=8).map(
            lambda s: s.replace("\r", "").replace("\n", "")
        ),
        st.sampled_from(["\n", "\r\n", "\r", ""]),
    ),
    max_size=6,
)


def _join(pieces: list[tuple[str, str]]) -> str:
    return "".join(body + end for body, end in pieces)


@settings(suppress_health_check=[HealthCheck.too_slow], max_examples=300)
@given(before=line_pieces.map(_join), after=line_pieces.map(_join))
def test_line_hunks_apply_to_the_new_text_in_every_encoding(before: str, after: str) -> None:
    for encoding in ENCODINGS:
        hunks = line_hunks(before, after, encoding)  # type: ignore[arg-type]
        edits = [
            lsp.TextEdit(
                range=lsp.Range(
                    start=lsp.Position(line=h.start.line, character=h.start.character),
                    end=lsp.Position(line=h.end.line, character=h.end.character),
                ),
                new_text=h.new_text,
            )
            for h in hunks
        ]
        assert apply_text_edits(before, edits, encoding) == after


AWKWARD_ENDS = {
    "emoji last line, no newline": ("x = 1\ny = '😀'", "x = 2\ny = '😀😀'"),
    "crlf": ("a = 'é'\r\nb = 1\r\n", "a = 'é'\r\nb = 2\r\nc = '中'\r\n"),
    "lone cr": ("a = 1\rb = '😀'", "a = 1\rb = '😀!'"),
    "form feed and U+2028 inside lines": (
        "a\x0cb = '\u2028'\nc = 1\n",
        "a\x0cb = '\u2028'\nc = 2\n",
    ),
}


@pytest.mark.parametrize("case", list(AWKWARD_ENDS))
@pytest.mark.parametrize("offer", ["utf-16 only", "utf-8 preferred", "utf-32"])
async def test_accepted_proposal_rebuilds_the_file(
    workspace: Path, scripted_model: Any, case: str, offer: str
) -> None:
    """The agent rewrites a file whose last line has an emoji / no newline / CRLF line ends;
    the edit the editor applies, in its encoding, yields exactly the agent's text (open
    buffer and closed file alike)."""
    before, after = AWKWARD_ENDS[case]
    (workspace / "odd.py").write_bytes(before.encode("utf-8"))
    (workspace / "shut.py").write_bytes(before.encode("utf-8"))
    turns = [
        Turn(
            tool_calls=[
                ToolCallSpec("write_file", {"path": "odd.py", "content": after}),
                ToolCallSpec("write_file", {"path": "shut.py", "content": after}),
            ]
        ),
        Turn(text="rewrote them"),
    ]
    offered, _ = OFFERS[offer]
    async with (
        scripted_model(turns) as model,
        editor_session(
            workspace, env=model_env(model), settings=SETTINGS, capabilities=capabilities(offered)
        ) as ed,
    ):
        ed.open("odd.py", before)
        run_id = (await ed.command(protocol.CMD_AGENT_START, {"task": "rewrite"}))["runId"]
        await ed.wait_for(lambda: ed.edits, what="the proposal's edit (annotations: sent)")
        await ed.wait_for(lambda: ed.last_proposal(run_id), what="the proposal")
        assert ed.text("odd.py") == after  # the open buffer
        assert ed.text("shut.py") == after  # the closed file, on disk


def test_hunk_positions_use_lsp_lines() -> None:
    """A form feed or U+2028 is not a line end for LSP (str.splitlines says it is)."""
    before = "a\u2028b\nc😀\n"
    hunks = line_hunks(before, "a\u2028b\nc😀!\n", "utf-16")
    assert [(h.start, h.end) for h in hunks] == [(Pos(1, 0), Pos(2, 0))]
    assert split_lines(before) == ["a\u2028b\n", "c😀\n"]


async def test_a_buffer_with_u2028_survives_the_editors_changes(
    workspace: Path, scripted_model: Any
) -> None:
    """The client syncs as the server asks: incrementally, pygls applied the change on
    ``str.splitlines`` lines, so with U+2028 in the buffer the change landed a line early and
    the run (and its edit) worked on a corrupted copy of the user's buffer."""
    before = "a = '\u2028'\nb = '😀'\n"
    typed = "a = '\u2028'\nb = '😀!'\n"
    (workspace / "sep.py").write_text(before, encoding="utf-8")
    turns = edit_turns("sep.py", "a = ", "A = ")
    async with (
        scripted_model(turns) as model,
        editor_session(workspace, env=model_env(model), settings=SETTINGS) as ed,
    ):
        sync = ed.initialize_result.capabilities.text_document_sync
        kind = sync.change if isinstance(sync, lsp.TextDocumentSyncOptions) else sync
        uri = ed.open("sep.py", before)
        codec = PositionCodec(ed.encoding)  # type: ignore[arg-type]
        at = codec.to_client("b = '😀'", len("b = '😀"))
        change: Any = (
            lsp.TextDocumentContentChangePartial(
                range=lsp.Range(
                    start=lsp.Position(line=1, character=at), end=lsp.Position(line=1, character=at)
                ),
                text="!",
            )
            if kind == lsp.TextDocumentSyncKind.Incremental
            else lsp.TextDocumentContentChangeWholeDocument(text=typed)
        )
        ed.buffers[uri] = (2, typed)
        ed.client.text_document_did_change(
            lsp.DidChangeTextDocumentParams(
                text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=2),
                content_changes=[change],
            )
        )
        await ed.command(protocol.CMD_AGENT_START, {"task": "rename a"})
        await ed.wait_for(lambda: ed.edits, what="the proposal's edit (annotations: sent)")
        assert ed.text("sep.py") == "A = '\u2028'\nb = '😀!'\n"


async def test_start_selection_counts_lines_as_lsp_does(
    workspace: Path, scripted_model: Any
) -> None:
    """The selection's lines are LSP lines: str.splitlines cut at U+2028 and sent the
    model the wrong line."""
    async with (
        scripted_model([Turn(text="seen")]) as model,
        editor_session(workspace, env=model_env(model), settings=SETTINGS) as ed,
    ):
        uri = ed.open("sel.py", "a = '\u2028'\nsecond = 2\r\nthird = 3\n")
        whole = lsp.Range(
            start=lsp.Position(line=1, character=0), end=lsp.Position(line=1, character=3)
        )
        started = await ed.command(
            protocol.CMD_AGENT_START,
            {"task": "look", "uri": uri, "range": ed.client.protocol._converter.unstructure(whole)},
        )
        events = await ed.wait_for(
            lambda: ed.events(started["runId"], "run_started"), what="the run's start"
        )
        assert "```\nsecond = 2\n```" in events[0]["task"]
