import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import * as path from "node:path";
import { test } from "node:test";

import * as protocol from "../../src/protocol";
import { repoRoot } from "./serverSchema";

type Value = string | string[];

/** The `NAME: Final = "..."` constants and `NAME: Final[tuple[...]] = (A, B)` tuples of protocol.py. */
function parsePythonProtocol(source: string): Map<string, Value> {
  const names = new Map<string, Value>();
  const scalar = /^([A-Z][A-Z0-9_]*)\s*:\s*Final\s*=\s*"([^"]*)"\s*(?:#.*)?$/gm;
  for (const m of source.matchAll(scalar)) {
    names.set(m[1] as string, m[2] as string);
  }
  const tuple = /^([A-Z][A-Z0-9_]*)\s*:\s*Final\[tuple\[[^\]]*\]\]\s*=\s*\(([^)]*)\)/gm;
  for (const m of source.matchAll(tuple)) {
    const items = (m[2] as string)
      .split(",")
      .map((s) => s.trim())
      .filter((s) => s !== "");
    names.set(
      m[1] as string,
      items.map((item) => {
        const literal = /^"([^"]*)"$/.exec(item);
        if (literal !== null) {
          return literal[1] as string;
        }
        const v = names.get(item);
        assert.equal(typeof v, "string", `protocol.py tuple ${m[1]} names unknown constant ${item}`);
        return v as string;
      }),
    );
  }
  return names;
}

test("test_protocol_ts_matches_protocol_py", () => {
  const source = readFileSync(path.join(repoRoot(), "server", "driveros_lsp", "protocol.py"), "utf8");
  const python = parsePythonProtocol(source);
  assert.ok(python.size >= 10, "protocol.py parsed to almost nothing: has its format changed?");
  const ts = new Map<string, Value>(
    Object.entries(protocol).map(([k, v]) => [k, Array.isArray(v) ? [...(v as string[])] : (v as string)]),
  );
  assert.deepEqual(Object.fromEntries([...ts].sort()), Object.fromEntries([...python].sort()));
});

test("test_protocol_parser_reads_scalars_and_tuples", () => {
  const parsed = parsePythonProtocol('A: Final = "x"\nB: Final = "y"  # noqa: S105\nALL: Final[tuple[str, ...]] = (\n    A,\n    B,\n)\nLIT: Final[tuple[str, ...]] = ("a", "bC")\n');
  assert.deepEqual(Object.fromEntries(parsed), { A: "x", B: "y", ALL: ["x", "y"], LIT: ["a", "bC"] });
});
