import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import * as path from "node:path";
import { test } from "node:test";

import { extensionRoot, repoRoot } from "./serverSchema";

/**
 * Every field the extension reads from what the server sends is declared in an interface of
 * src/events.ts (or RunSummary in src/runs.ts); each must be a property of the server's model
 * in editors/protocol.schema.json (generated from server/driveros_lsp/protocol_models.py),
 * as protocol.test.ts does for the names.
 */

interface Def {
  properties?: Record<string, unknown>;
  oneOf?: { $ref: string }[];
}
interface Schema {
  notifications: Record<string, { $ref: string }>;
  commands: Record<string, { $ref: string }>;
  $defs: Record<string, Def>;
}

function loadSchema(): Schema {
  return JSON.parse(readFileSync(path.join(repoRoot(), "editors", "protocol.schema.json"), "utf8")) as Schema;
}

/** `export interface Name { field?: type; ... }` of a TypeScript file: name -> field names. */
export function interfaceFields(source: string): Map<string, string[]> {
  const found = new Map<string, string[]>();
  for (const m of source.matchAll(/^export interface (\w+) \{\n([\s\S]*?)\n\}/gm)) {
    const fields = [...(m[2] as string).matchAll(/^ {2}(\w+)\??:/gm)].map((f) => f[1] as string);
    found.set(m[1] as string, fields);
  }
  return found;
}

function defName(ref: string): string {
  return ref.replace("#/$defs/", "");
}

function properties(schema: Schema, ...defs: string[]): Set<string> {
  const names = new Set<string>();
  for (const name of defs) {
    const def = schema.$defs[name];
    assert.ok(def !== undefined, `the schema has no ${name}`);
    Object.keys(def.properties ?? {}).forEach((p) => names.add(p));
  }
  return names;
}

/** Which of the schema's shapes each client interface reads. */
function shapes(schema: Schema): Record<string, Set<string>> {
  const trace = schema.$defs["TraceParams"]?.properties?.["event"] as Def | undefined;
  const events = (trace?.oneOf ?? []).map((r) => defName(r.$ref));
  assert.ok(events.length >= 10, "TraceParams.event lists almost no events: has the schema changed?");
  return {
    TraceParams: properties(schema, defName(schema.notifications["driveros/trace"]?.$ref ?? "")),
    TraceEvent: properties(schema, ...events),
    TraceLocation: properties(schema, "TraceLocation"),
    Usage: properties(schema, "Usage"),
    DiagnosticItem: properties(schema, "DiagnosticItem"),
    ProposalParams: properties(schema, defName(schema.notifications["driveros/proposal"]?.$ref ?? "")),
    ProposalFileParams: properties(schema, "ProposalFile"),
    CouncilVerdict: properties(schema, "CouncilVerdict", "CouncilError"),
    CouncilIssue: properties(schema, "CouncilIssue"),
    StartResult: properties(schema, defName(schema.commands["driveros.agent.start"]?.$ref ?? "")),
    RunSummary: properties(schema, "RunSummary"),
    CommandResult: properties(schema, defName(schema.commands["driveros.agent.command"]?.$ref ?? "")),
    CustomCommandInfo: properties(schema, "CustomCommandInfo"),
  };
}

test("test_every_field_the_extension_reads_is_in_the_payload_schema", () => {
  const schema = loadSchema();
  const known = shapes(schema);
  const src = path.join(extensionRoot(), "src");
  const declared = interfaceFields(readFileSync(path.join(src, "events.ts"), "utf8"));
  const runs = interfaceFields(readFileSync(path.join(src, "runs.ts"), "utf8"));
  declared.set("RunSummary", runs.get("RunSummary") ?? []);
  // a new interface of events.ts must say which shape it reads
  assert.deepEqual([...declared.keys()].sort(), Object.keys(known).sort());
  const missing: string[] = [];
  for (const [name, fields] of declared) {
    assert.ok(fields.length > 0, `${name} declares no field: has its format changed?`);
    for (const field of fields) {
      if (!(known[name] as Set<string>).has(field)) {
        missing.push(`${name}.${field}`);
      }
    }
  }
  assert.deepEqual(missing, [], "fields the extension reads that the server never sends");
});

test("test_every_notification_and_command_has_a_schema", () => {
  const schema = loadSchema();
  assert.deepEqual(Object.keys(schema.notifications).sort(), ["driveros/proposal", "driveros/trace"]);
  for (const ref of [...Object.values(schema.notifications), ...Object.values(schema.commands)]) {
    assert.ok(schema.$defs[defName(ref.$ref)] !== undefined, ref.$ref);
  }
});

test("test_interface_parser_reads_fields", () => {
  const parsed = interfaceFields('export interface A {\n  /** doc */\n  x: string;\n  y?: { z: number }[];\n}\n\nexport interface B {\n  w?: number;\n}\n');
  assert.deepEqual(Object.fromEntries(parsed), { A: ["x", "y"], B: ["w"] });
});
