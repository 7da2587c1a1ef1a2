// Loaded with `node --require`: makes require("vscode") resolve to the stub.
import Module from "node:module";
import * as path from "node:path";

const stub = path.join(__dirname, "vscodeStub.js");
const mod = Module as unknown as { _resolveFilename: (request: string, ...rest: unknown[]) => string };
const original = mod._resolveFilename.bind(Module);
mod._resolveFilename = (request: string, ...rest: unknown[]): string => (request === "vscode" ? stub : original(request, ...rest));
