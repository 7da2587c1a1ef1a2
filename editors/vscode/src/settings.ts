/** The server settings: the `driveros` configuration section minus the client-only keys. */

import * as vscode from "vscode";

import { SETTINGS_SECTION } from "./protocol";
import { CLIENT_ONLY_SECTIONS } from "./settingsSchema";

/** What goes to the server as initializationOptions and in didChangeConfiguration. */
export function serverSettings(scope?: vscode.ConfigurationScope): Record<string, unknown> {
  const config = vscode.workspace.getConfiguration(SETTINGS_SECTION, scope);
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(config)) {
    if (typeof value === "function" || CLIENT_ONLY_SECTIONS.includes(key)) {
      continue;
    }
    out[key] = value;
  }
  return out;
}

export function configuredServerPath(): string {
  return vscode.workspace.getConfiguration(SETTINGS_SECTION).get<string>("server.path", "");
}
