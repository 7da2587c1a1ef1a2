// Regenerate package.json `contributes.configuration` from the server's settings JSON Schema,
// and the Restricted Mode list (`restrictedConfigurations`) from src/settingsSchema.ts.
//   npm run sync-settings        (DRIVEROS_PYTHON picks the interpreter; default ../../.venv)
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const require = createRequire(import.meta.url);
const { configurationProperties, isClientOnly, restrictedConfigurations } = require(join(root, "out/src/settingsSchema.js"));
const { serverSchema } = require(join(root, "out/test/unit/serverSchema.js"));

const pkgPath = join(root, "package.json");
const pkg = JSON.parse(readFileSync(pkgPath, "utf8"));
const props = pkg.contributes.configuration.properties;
const clientOnly = Object.fromEntries(Object.entries(props).filter(([k]) => isClientOnly(k)));
pkg.contributes.configuration.properties = { ...configurationProperties(serverSchema(execFileSync)), ...clientOnly };
pkg.capabilities.untrustedWorkspaces.restrictedConfigurations = restrictedConfigurations();
writeFileSync(pkgPath, `${JSON.stringify(pkg, null, 2)}\n`);
process.stdout.write(`wrote ${Object.keys(pkg.contributes.configuration.properties).length} settings to package.json\n`);
