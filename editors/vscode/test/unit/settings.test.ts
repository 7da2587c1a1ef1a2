import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import * as path from "node:path";
import { beforeEach, test } from "node:test";

import { serverSettings } from "../../src/settings";
import { configurationProperties, isClientOnly, restrictedConfigurations } from "../../src/settingsSchema";
import { extensionRoot, serverSchema } from "./serverSchema";
import { state } from "./vscodeStub";

interface Pkg {
  contributes: { configuration: { properties: Record<string, Record<string, unknown>> } };
  capabilities: { untrustedWorkspaces: { supported: string; restrictedConfigurations: string[] } };
}

function packageJson(): Pkg {
  return JSON.parse(readFileSync(path.join(extensionRoot(), "package.json"), "utf8")) as Pkg;
}

beforeEach(() => {
  state.configuration = {};
});

test("test_package_json_settings_equal_server_schema", () => {
  const props = packageJson().contributes.configuration.properties;
  const serverSide = Object.fromEntries(Object.entries(props).filter(([k]) => !isClientOnly(k)));
  const expected = configurationProperties(serverSchema(execFileSync));
  assert.deepEqual(serverSide, expected, "package.json settings drifted from the server schema: run `npm run sync-settings`");
});

test("test_package_json_restricted_configurations_equal_the_source", () => {
  const untrusted = packageJson().capabilities.untrustedWorkspaces;
  assert.equal(untrusted.supported, "limited");
  assert.deepEqual(untrusted.restrictedConfigurations, restrictedConfigurations(), "run `npm run sync-settings`");
  const declared = new Set(Object.keys(packageJson().contributes.configuration.properties));
  for (const key of untrusted.restrictedConfigurations) {
    assert.ok(declared.has(key), `restricted ${key} is not a declared setting`);
  }
});

test("test_package_json_client_only_settings_are_server_path_and_trace", () => {
  const keys = Object.keys(packageJson().contributes.configuration.properties).filter(isClientOnly);
  assert.deepEqual(keys.sort(), ["driveros.server.path", "driveros.trace.server"]);
});

test("test_settings_schema_maps_nullable_enum", () => {
  const props = configurationProperties({
    properties: {
      provider: { anyOf: [{ enum: ["a", "b"], type: "string" }, { type: "null" }], default: null, description: "p", title: "Provider" },
      maxIterations: { type: "integer", default: 30, minimum: 1, maximum: 500, description: "m", title: "Max" },
    },
  });
  assert.deepEqual(props, {
    "driveros.provider": { type: ["string", "null"], default: null, description: "p", enum: ["a", "b", null] },
    "driveros.maxIterations": { type: "integer", default: 30, description: "m", minimum: 1, maximum: 500 },
  });
});

test("test_server_settings_leave_out_client_only_keys", () => {
  state.configuration = {
    "driveros.provider": "openai",
    "driveros.maxIterations": 7,
    "driveros.server.path": "/opt/driveros-lsp",
    "driveros.trace.server": "verbose",
    "other.key": 1,
  };
  assert.deepEqual(serverSettings(), { provider: "openai", maxIterations: 7 });
});
