/**
 * Owns the language client: finds driveros-lsp, starts it over stdio with the settings as
 * initializationOptions, forwards setting changes, routes the driveros/* notifications into
 * the RunStore, and tells the user how to fix a missing or too old server.
 */

import * as os from "node:os";

import * as vscode from "vscode";
import {
  type ClientCapabilities,
  DidChangeConfigurationNotification,
  ExecuteCommandRequest,
  type FeatureState,
  LanguageClient,
  type LanguageClientOptions,
  type ServerOptions,
  ShowMessageRequest,
  State,
  type StaticFeature,
  TransportKind,
} from "vscode-languageclient/node";

import { answerMessageRequest } from "./approval";
import { registerInlineCompletion } from "./inline";
import { approvalDetail } from "./traceModel";
import { type TraceEvent, isProposalParams, isTraceParams } from "./events";
import {
  CMD_AGENT_CANCEL,
  CMD_AGENT_FIX,
  CMD_AGENT_LIST,
  CMD_AGENT_START,
  CMD_REVIEW_ACCEPT,
  CMD_REVIEW_REJECT,
  EXPERIMENTAL_TRACE,
  NOTIFY_PROPOSAL,
  NOTIFY_TRACE,
  SERVER_NAME,
  SETTINGS_SECTION,
} from "./protocol";
import type { RunStore } from "./runs";
import { resolveServer, serverTooOld } from "./serverPath";
import { configuredServerPath, serverSettings } from "./settings";
import type { StatusBar } from "./status";

/** Advertises that this client renders driveros/trace itself. */
class TraceCapability implements StaticFeature {
  fillClientCapabilities(capabilities: ClientCapabilities): void {
    capabilities.experimental = { ...(capabilities.experimental as object | undefined), [EXPERIMENTAL_TRACE]: true };
  }
  getState(): FeatureState {
    return { kind: "static" };
  }
  initialize(): void {}
  clear(): void {}
}

/** The commands this client sends; a server without them predates it. */
const REQUIRED_COMMANDS: readonly string[] = [CMD_AGENT_START, CMD_AGENT_FIX, CMD_AGENT_CANCEL, CMD_AGENT_LIST, CMD_REVIEW_ACCEPT, CMD_REVIEW_REJECT];

const INSTALL_HINT =
  "Install it in the workspace (python -m venv .venv && .venv/bin/pip install driveros) or set driveros.server.path.";

export class DriverosClient implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private readonly disposables: vscode.Disposable[] = [];
  private readonly runDisposables: vscode.Disposable[] = [];
  private stopping = false;

  constructor(
    private readonly store: RunStore,
    private readonly status: StatusBar,
    private readonly log: vscode.LogOutputChannel,
    private readonly onProposal: (runId: string) => void,
  ) {
    this.disposables.push(
      vscode.workspace.onDidChangeConfiguration((e) => {
        if (e.affectsConfiguration(`${SETTINGS_SECTION}.server`)) {
          void this.restart();
        } else if (e.affectsConfiguration(SETTINGS_SECTION) && this.client?.isRunning() === true) {
          void this.client.sendNotification(DidChangeConfigurationNotification.type, { settings: { [SETTINGS_SECTION]: serverSettings() } });
        }
      }),
      // Trust granted: the workspace's own .venv server and its driveros.server.path now count.
      vscode.workspace.onDidGrantWorkspaceTrust(() => void this.restart()),
    );
  }

  get running(): boolean {
    return this.client?.isRunning() === true;
  }

  get languageClient(): LanguageClient | undefined {
    return this.client;
  }

  async start(): Promise<void> {
    const folders = (vscode.workspace.workspaceFolders ?? []).filter((f) => f.uri.scheme === "file").map((f) => f.uri.fsPath);
    const resolved = resolveServer({ configured: configuredServerPath(), workspaceFolders: folders, envPath: process.env["PATH"], home: os.homedir(), workspaceTrusted: vscode.workspace.isTrusted });
    if ("error" in resolved) {
      this.status.set("missing", resolved.error);
      this.log.error(resolved.error);
      void vscode.window.showErrorMessage(`DriverOS: ${resolved.error} ${INSTALL_HINT}`, "Open Settings", "Show Log").then((choice) => {
        if (choice === "Open Settings") {
          void vscode.commands.executeCommand("workbench.action.openSettings", "driveros.server.path");
        } else if (choice === "Show Log") {
          this.log.show();
        }
      });
      return;
    }
    this.log.info(`starting ${resolved.command} (from ${resolved.source})`);
    this.status.set("starting");
    const serverOptions: ServerOptions = {
      command: resolved.command,
      args: [],
      transport: TransportKind.stdio,
      options: { cwd: folders[0] },
    };
    const clientOptions: LanguageClientOptions = {
      documentSelector: [{ scheme: "file" }, { scheme: "untitled" }],
      outputChannel: this.log,
      initializationOptions: serverSettings(),
      diagnosticCollectionName: SERVER_NAME,
      middleware: {
        workspace: {
          // Answer workspace/configuration with the server's settings only (no client-only keys).
          configuration: (params, token, next) =>
            params.items.map((item, i) => (item.section === SETTINGS_SECTION ? serverSettings() : (next(params, token) as unknown[])[i])),
        },
      },
    };
    const client = new LanguageClient("driveros", "DriverOS", serverOptions, clientOptions);
    client.registerFeature(new TraceCapability());
    registerInlineCompletion(client);
    this.client = client;
    this.runDisposables.push(
      // approval questions as a modal (any other message request as usual)
      client.onRequest(ShowMessageRequest.type, (params) => answerMessageRequest(params)),
      client.onNotification(NOTIFY_TRACE, (params: unknown) => {
        if (isTraceParams(params)) {
          this.store.apply(params.runId, params.event, params.locations);
          this.traceLog(params.runId, params.event);
        }
      }),
      client.onNotification(NOTIFY_PROPOSAL, (params: unknown) => {
        if (isProposalParams(params)) {
          const wasPending = this.store.get(params.runId)?.proposalPending === true;
          const run = this.store.proposal(params.runId, params.files, params.rationale, params.state, params.council);
          this.log.info(`[${params.runId}] proposal (${params.state ?? "proposed"}): ${params.files.map((f) => f.path).join(", ") || "no files pending"}`);
          if (run.proposalPending && !wasPending) {
            this.onProposal(params.runId);
          }
        }
      }),
      client.onDidChangeState((e) => {
        if (e.newState === State.Running) {
          this.status.set("ready");
        } else if (e.newState === State.Stopped) {
          this.store.serverStopped();
          if (!this.stopping) {
            this.status.set("stopped", "driveros-lsp stopped: run “DriverOS: Restart Server”");
          }
        }
      }),
    );
    try {
      await client.start();
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      this.status.set("error", `driveros-lsp failed to start: ${message}`);
      this.log.error(`driveros-lsp failed to start: ${message}`);
      void vscode.window.showErrorMessage(`DriverOS: driveros-lsp failed to start (${message}).`, "Show Log").then((c) => {
        if (c === "Show Log") {
          this.log.show();
        }
      });
      return;
    }
    const info = client.initializeResult;
    const version = info?.serverInfo?.version;
    this.log.info(`${info?.serverInfo?.name ?? SERVER_NAME} ${version ?? "(no version)"} is running`);
    const tooOld = serverTooOld(version, info?.capabilities.executeCommandProvider?.commands ?? [], REQUIRED_COMMANDS);
    if (tooOld !== undefined) {
      this.status.set("error", tooOld);
      void vscode.window.showWarningMessage(`DriverOS: ${tooOld} Upgrade it (pip install -U driveros) or point driveros.server.path at a newer one.`, "Open Settings").then((c) => {
        if (c === "Open Settings") {
          void vscode.commands.executeCommand("workbench.action.openSettings", "driveros.server.path");
        }
      });
    }
  }

  async stop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    for (const d of this.runDisposables.splice(0)) {
      void d.dispose();
    }
    if (client === undefined) {
      return;
    }
    this.stopping = true;
    try {
      if (client.isRunning()) {
        await client.stop(5000);
      }
      await client.dispose();
    } catch (err) {
      this.log.warn(`stopping driveros-lsp: ${err instanceof Error ? err.message : String(err)}`);
    } finally {
      this.stopping = false;
    }
  }

  async restart(): Promise<void> {
    await this.stop();
    await this.start();
  }

  /** The running client, or undefined after telling the user the server is not running. */
  ready(): LanguageClient | undefined {
    const client = this.client;
    if (client === undefined || !client.isRunning()) {
      void vscode.window.showErrorMessage("DriverOS: the language server is not running.", "Restart Server").then((c) => {
        if (c === "Restart Server") {
          void vscode.commands.executeCommand("driveros.restartServer");
        }
      });
      return undefined;
    }
    return client;
  }

  /** workspace/executeCommand on the server; undefined (after telling the user) when it failed. */
  async execute<T>(command: string, arg: object): Promise<T | undefined> {
    const client = this.ready();
    if (client === undefined) {
      return undefined;
    }
    try {
      const answer: unknown = await client.sendRequest(ExecuteCommandRequest.type, { command, arguments: [arg] });
      return answer as T;
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      this.log.error(`${command} failed: ${message}`);
      void vscode.window.showErrorMessage(`DriverOS: ${message}`);
      return undefined;
    }
  }

  private traceLog(runId: string, event: TraceEvent): void {
    switch (event.type) {
      case "thinking":
      case "text":
        this.log.trace(`[${runId}] ${event.type}: ${event.text ?? ""}`);
        break;
      case "tool_call":
        this.log.info(`[${runId}] tool ${event.name ?? "?"} ${JSON.stringify(event.arguments ?? {})}`);
        break;
      case "tool_result":
        this.log.info(`[${runId}] tool ${event.name ?? "?"} ${event.ok === false ? "failed" : "ok"}`);
        break;
      case "approval":
        this.log.info(`[${runId}] ${event.name ?? "?"} ${event.decision ?? ""}${approvalDetail(event)}: ${event.reason ?? ""}`);
        break;
      case "result":
        this.log.info(`[${runId}] ${event.outcome ?? "finished"}: ${event.answer ?? event.error ?? ""}`);
        break;
      default:
        this.log.debug(`[${runId}] ${event.type}`);
    }
  }

  async dispose(): Promise<void> {
    for (const d of this.disposables.splice(0)) {
      void d.dispose();
    }
    await this.stop();
  }
}
