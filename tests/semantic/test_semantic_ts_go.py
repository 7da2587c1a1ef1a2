"""The semantic tools against real typescript-language-server and gopls in the local sandbox:
answers equal the server's own (asked directly); rename applies exactly the server's edit."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.semantic._oracle import Oracle, places, program

from driveros.sandbox import LocalSandbox
from driveros.semantic import LanguageServerError, SemanticTools, server_mounts

CALC_TS = """/** Sum the items. */
export function computeTotal(items: number[]): number {
  return items.reduce((a, b) => a + b, 0);
}
"""
MAIN_TS = """import { computeTotal } from "./calc";

console.log(computeTotal([1, 2]));
"""
GO_MOD = "module example.com/m\n\ngo 1.21\n"
CALC_GO = """package calc

// ComputeTotal sums the items.
func ComputeTotal(items []int) int {
\tt := 0
\tfor _, i := range items {
\t\tt += i
\t}
\treturn t
}
"""
MAIN_GO = """package main

import (
\t"fmt"

\t"example.com/m/calc"
)

func main() {
\tfmt.Println(calc.ComputeTotal([]int{1, 2}))
}
"""


def ts_project(root: Path) -> Path:
    (root / "src").mkdir(parents=True)
    (root / "tsconfig.json").write_text(
        '{"compilerOptions": {"strict": true, "target": "es2020", "module": "commonjs"}, '
        '"include": ["src"]}\n'
    )
    (root / "src/calc.ts").write_text(CALC_TS)
    (root / "src/main.ts").write_text(MAIN_TS)
    return root


def go_project(root: Path) -> Path:
    (root / "calc").mkdir(parents=True)
    (root / "go.mod").write_text(GO_MOD)
    (root / "calc/calc.go").write_text(CALC_GO)
    (root / "main.go").write_text(MAIN_GO)
    return root


async def test_semantic_typescript_answers_and_rename_equal_the_servers(tmp_path: Path) -> None:
    program("typescript-language-server")
    root = ts_project(tmp_path / "ts")
    async with Oracle("typescript-language-server", root) as oracle:
        oracle.open("src/calc.ts")
        oracle.open("src/main.ts")
        want_refs = await oracle.references("src/calc.ts", 2, 17)
        want_def = await oracle.definition("src/main.ts", 3, 13)
        want_hover = await oracle.hover("src/main.ts", 3, 13)
        want_rename = await oracle.rename("src/calc.ts", 2, 17, "grandTotal")
    async with LocalSandbox(root, read_only=server_mounts()) as sandbox:
        tools = SemanticTools(sandbox)
        refs = await tools.references(None, None, None, "computeTotal")
        assert places(refs.text) == want_refs
        assert len(want_refs) == 3
        assert places((await tools.definition("src/main.ts", 3, 13, None)).text) == want_def
        assert (await tools.hover("src/main.ts", 3, 13, None)).text == want_hover
        outline = await tools.symbols(None, "src/calc.ts")
        assert "2:17 function computeTotal" in outline.text
        renamed = await tools.rename(None, None, None, "computeTotal", "grandTotal")
        assert sorted(renamed.edits) == sorted(want_rename) == ["src/calc.ts", "src/main.ts"]
        for rel, text in want_rename.items():
            assert (root / rel).read_text() == text
        await tools.aclose()


async def test_semantic_go_answers_and_rename_equal_the_servers(tmp_path: Path) -> None:
    program("gopls")
    root = go_project(tmp_path / "go")
    async with Oracle("gopls", root) as oracle:
        oracle.open("calc/calc.go")
        oracle.open("main.go")
        want_refs = await oracle.references("main.go", 10, 19)
        want_def = await oracle.definition("main.go", 10, 19)
        want_hover = await oracle.hover("main.go", 10, 19)
        want_rename = await oracle.rename("calc/calc.go", 4, 6, "GrandTotal")
    async with LocalSandbox(root, read_only=server_mounts()) as sandbox:
        tools = SemanticTools(sandbox)
        refs = await tools.references(None, None, None, "ComputeTotal")
        assert places(refs.text) == want_refs
        assert {p for p, _, _ in want_refs} == {"calc/calc.go", "main.go"}
        assert places((await tools.definition("main.go", 10, 19, None)).text) == want_def
        assert (await tools.hover("main.go", 10, 19, None)).text == want_hover
        with pytest.raises(LanguageServerError, match="unexported"):
            await tools.rename("calc/calc.go", 4, 6, None, "grandTotal")
        assert (root / "main.go").read_text() == MAIN_GO  # a refused rename writes nothing
        renamed = await tools.rename("calc/calc.go", 4, 6, None, "GrandTotal")
        assert sorted(renamed.edits) == sorted(want_rename)
        for rel, text in want_rename.items():
            assert (root / rel).read_text() == text
        await tools.aclose()
