"""How the semantic tools appear in traces: ACP titles, kinds and result locations."""

from __future__ import annotations

from pathlib import Path

from driveros.acp._updates import result_locations, tool_kind, tool_title


def test_semantic_titles_name_the_symbol() -> None:
    assert tool_title("references", {"symbol": "compute_total"}) == "references to compute_total"
    assert tool_title("definition", {"symbol": "Cart.total"}) == "definition of Cart.total"
    assert tool_title("references", {"path": "a.py", "line": 3, "column": 1}) == "references: a.py"
    assert tool_title("symbols", {"query": "Cart"}) == "symbols: Cart"
    assert {tool_kind(n) for n in ("definition", "references", "symbols")} == {"search"}
    assert tool_kind("hover") == "read" and tool_kind("rename") == "edit"


def test_semantic_result_locations_are_the_answers_places(tmp_path: Path) -> None:
    output = (
        "2 references to f in 2 files (declaration included):\n"
        "a.py:1:5: def f():\n"
        "pkg/b.py:10:3: f()\n"
        "/usr/lib/python3/x.py:4:1: outside\n"
        "../escape.py:1:1: outside\n"
    )
    found = result_locations(tmp_path, "references", output)
    assert found is not None
    assert [(loc.path, loc.line) for loc in found] == [
        (str(tmp_path / "a.py"), 1),
        (str(tmp_path / "pkg/b.py"), 10),
    ]
    assert result_locations(tmp_path, "search", output) is None
