"""The semantic tools against real typescript-language-server and gopls in the local sandbox:
answers equal the server's own (asked directly); rename applies exactly the server's edit."""

from __future__ import annotations

from pathlib import Path

from tests.semantic._checks import go_answers_and_rename, typescript_answers_and_rename
from tests.semantic._oracle import program

from driveros.sandbox import LocalSandbox
from driveros.semantic import server_mounts

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
    async with LocalSandbox(root, read_only=server_mounts()) as sandbox:
        tools = await typescript_answers_and_rename(root, sandbox)
        await tools.aclose()


async def test_semantic_go_answers_and_rename_equal_the_servers(tmp_path: Path) -> None:
    program("gopls")
    root = go_project(tmp_path / "go")
    async with LocalSandbox(root, read_only=server_mounts()) as sandbox:
        tools = await go_answers_and_rename(root, sandbox)
        await tools.aclose()
