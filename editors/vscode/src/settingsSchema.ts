/**
 * Maps the server's settings JSON Schema (driveros_lsp settings_json_schema(), camelCase wire
 * names) to package.json `contributes.configuration.properties`. scripts/sync-settings.mjs writes
 * package.json with it and test/unit/settings.test.ts fails when the two drift.
 */

import { SETTINGS_SECTION } from "./protocol";

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

/** Settings only the client reads; they are never sent to the server. */
export const CLIENT_ONLY_SECTIONS: readonly string[] = ["server", "trace"];

/**
 * Settings a workspace's own `.vscode/settings.json` must not choose in Restricted Mode: where
 * and how a run's commands execute (tier, runtime, network, untrusted), who approves them,
 * which provider and model receive the code, what is remembered and how much may be spent.
 * package.json lists them (as `driveros.<name>`, with the client's `driveros.server.path`) in
 * `capabilities.untrustedWorkspaces.restrictedConfigurations`; scripts/sync-settings.mjs writes
 * that list and a unit test fails when it drifts. Keys and endpoints are never settings.
 */
export const RESTRICTED_SETTINGS: readonly string[] = [
  "approval",
  "approvalTimeoutS",
  "inlineCompletion.api",
  "inlineCompletion.enabled",
  "inlineCompletion.model",
  "inlineCompletion.provider",
  "maxCostUsd",
  "memory",
  "model",
  "network",
  "provider",
  "runtime",
  "sandbox",
  "untrusted",
];

/** The client's own settings a workspace must not choose (the server it starts). */
const RESTRICTED_CLIENT_SETTINGS: readonly string[] = ["server.path"];

/** package.json `capabilities.untrustedWorkspaces.restrictedConfigurations`, sorted. */
export function restrictedConfigurations(): string[] {
  return [...RESTRICTED_SETTINGS, ...RESTRICTED_CLIENT_SETTINGS].map((n) => `${SETTINGS_SECTION}.${n}`).sort();
}

const COPIED = ["type", "default", "description", "enum", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minLength", "pattern"];

function isObject(v: Json | undefined): v is JsonObject {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function property(schema: JsonObject): JsonObject {
  let base: JsonObject = schema;
  let nullable = false;
  const anyOf = schema["anyOf"];
  if (Array.isArray(anyOf)) {
    const parts = anyOf.filter(isObject);
    const nonNull = parts.filter((p) => p["type"] !== "null");
    nullable = nonNull.length < parts.length;
    if (nonNull.length !== 1 || nonNull[0] === undefined) {
      throw new Error(`unsupported settings schema: ${JSON.stringify(schema)}`);
    }
    base = { ...nonNull[0], ...Object.fromEntries(Object.entries(schema).filter(([k]) => k !== "anyOf")) };
  }
  const out: JsonObject = {};
  for (const key of COPIED) {
    const value = base[key];
    if (value !== undefined) {
      out[key] = value;
    }
  }
  if (nullable) {
    out["type"] = [base["type"] ?? "string", "null"];
    const values = out["enum"];
    if (Array.isArray(values)) {
      out["enum"] = [...values, null];
    }
  }
  return out;
}

/** The model a `$ref` (`#/$defs/Name`) names, or undefined. */
function referenced(schema: JsonObject, sub: JsonObject): JsonObject | undefined {
  const ref = sub["$ref"];
  const defs = schema["$defs"];
  if (typeof ref !== "string" || !ref.startsWith("#/$defs/") || !isObject(defs)) {
    return undefined;
  }
  const target = defs[ref.slice("#/$defs/".length)];
  return isObject(target) ? target : undefined;
}

/** The package.json configuration properties for a server settings schema. A nested settings
 * object (`inlineCompletion`) becomes one dotted setting per field
 * (`driveros.inlineCompletion.enabled`): VS Code hands them back as the nested object. */
export function configurationProperties(schema: JsonObject): JsonObject {
  const props = schema["properties"];
  if (!isObject(props)) {
    throw new Error("settings schema has no properties");
  }
  const out: JsonObject = {};
  // Sorted: the CLI prints the schema with sorted keys, and VS Code lists settings by name.
  for (const name of Object.keys(props).sort()) {
    const sub = props[name];
    if (!isObject(sub)) {
      throw new Error(`settings schema property ${name} is not an object`);
    }
    const nested = referenced(schema, sub);
    const fields = nested?.["properties"];
    if (nested !== undefined && isObject(fields)) {
      for (const field of Object.keys(fields).sort()) {
        const inner = fields[field];
        if (!isObject(inner)) {
          throw new Error(`settings schema property ${name}.${field} is not an object`);
        }
        out[`${SETTINGS_SECTION}.${name}.${field}`] = property(inner);
      }
      continue;
    }
    out[`${SETTINGS_SECTION}.${name}`] = property(sub);
  }
  return out;
}

/** Whether a package.json configuration key is client-only (not part of the server schema). */
export function isClientOnly(key: string): boolean {
  return CLIENT_ONLY_SECTIONS.some((s) => key.startsWith(`${SETTINGS_SECTION}.${s}.`));
}
