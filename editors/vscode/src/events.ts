/**
 * The shapes the server sends, as the client reads them. They are the server's models
 * (server/driveros_lsp/protocol_models.py; the trace's events are core/driveros/agent/_events.py,
 * docs/events.md), whose JSON Schema is editors/protocol.schema.json: test/unit/payloads.test.ts
 * fails when a field declared here is not in it. The client is tolerant: an unknown event type
 * or a missing optional field is shown generically, never an error.
 */

import type { PROPOSAL_FILE_FIELDS } from "./protocol";

export interface Usage {
  input_tokens?: number;
  output_tokens?: number;
  total_tokens?: number;
  cache_read_tokens?: number;
  cache_write_tokens?: number;
  reasoning_tokens?: number;
  /** US dollars (null: nothing priced, or a price unknown for some tokens). */
  cost_usd?: number | null;
  /** A price could not be found for some tokens: the cost is unknown, never 0. */
  cost_unknown?: boolean;
}

export interface DiagnosticItem {
  path: string;
  line?: number;
  column?: number;
  severity?: string;
  code?: string | null;
  source?: string;
  message: string;
}

/**
 * One agent event; `type` discriminates, other fields depend on it. The trace never carries a
 * `proposal` event: the proposal arrives once, as `driveros/proposal` (ProposalParams).
 */
export interface TraceEvent {
  type: string;
  run_id: string;
  seq?: number;
  ts?: number;
  turn?: number;
  task?: string;
  provider?: string;
  model?: string;
  sandbox?: string;
  text?: string;
  delta?: boolean;
  call_id?: string;
  name?: string;
  arguments?: Record<string, unknown>;
  ok?: boolean;
  output?: string;
  duration_ms?: number;
  observed?: boolean;
  truncated?: boolean;
  total?: number;
  new?: DiagnosticItem[];
  fixed?: DiagnosticItem[];
  unchanged?: number;
  action?: string;
  count?: number;
  detail?: string;
  decision?: string;
  reason?: string;
  /** approval: a human was asked; who answered; what an allowance covers; the tier. */
  asked?: boolean;
  answered_by?: string | null;
  scope?: "once" | "run" | null;
  tier?: string | null;
  detector?: string;
  evidence?: string[];
  path?: string;
  /** checkpoint: its number in the run, and the paths its turn changed. */
  checkpoint?: number;
  files?: string[];
  usage?: Usage;
  outcome?: string;
  exit_code?: number;
  answer?: string;
  verified?: boolean;
  turns?: number;
  error?: string | null;
}

/**
 * An LSP Location a trace event names (a semantic tool's answer): the file in the workspace and
 * the identifier's range, in the negotiated position encoding (docs/protocol.md, "Trace").
 */
export interface TraceLocation {
  uri: string;
  range: { start: { line: number; character: number }; end: { line: number; character: number } };
}

/** Params of the `driveros/trace` notification. */
export interface TraceParams {
  runId: string;
  event: TraceEvent;
  /** The event's places as Locations ([] for most events; absent from an older server). */
  locations?: TraceLocation[];
}

/**
 * A file of a `driveros/proposal` notification: exactly the server's ProposalFile
 * (server/driveros_lsp/protocol_models.py, docs/protocol.md), whose wire names are
 * `PROPOSAL_FILE_FIELDS` in protocol.ts (a compile-time check below keeps them equal).
 */
export interface ProposalFileParams {
  /** Workspace-relative path (the new path of a rename). */
  path: string;
  uri?: string;
  action?: "create" | "modify" | "delete" | "rename";
  /** A rename's source path. */
  oldPath?: string | null;
  /** Unified diff of the change. */
  diff?: string;
  /** The whole proposed content; null for a delete, a binary file or a file too large to send. */
  newText?: string | null;
  binary?: boolean;
  /** The file could not be applied (edited in the editor since the run started). */
  conflict?: boolean;
}

type ExactKeys<A, B> = [A] extends [B] ? ([B] extends [A] ? true : never) : never;
/** Fails to compile when ProposalFileParams and PROPOSAL_FILE_FIELDS drift apart. */
export const PROPOSAL_FILE_KEYS_MATCH: ExactKeys<keyof ProposalFileParams, (typeof PROPOSAL_FILE_FIELDS)[number]> = true;

/** One issue the council found. */
export interface CouncilIssue {
  severity?: string;
  description?: string;
  evidence?: string;
}

/** The council's review of a proposal (when the `council` setting is on): a verdict, or an error. */
export interface CouncilVerdict {
  /** approve, revise or reject. */
  verdict?: string;
  summary?: string;
  issues?: CouncilIssue[];
  referee?: unknown;
  /** The council could not decide (the proposal stands). */
  error?: string;
}

/** Params of the `driveros/proposal` notification. */
export interface ProposalParams {
  runId: string;
  /** The run's server state: proposed, accepted, rejected, canceled. */
  state?: string;
  files: ProposalFileParams[];
  rationale?: string;
  council?: CouncilVerdict | null;
}

/** What the run-starting commands answer at once. */
export interface StartResult {
  runId: string;
}

/** One custom command the server offers (driveros.agent.command without a name). */
export interface CustomCommandInfo {
  name: string;
  description: string;
  argumentHint: string;
  source: "user" | "workspace";
}

/** driveros.agent.command: the started run, or (no name given) the commands. */
export interface CommandResult {
  runId: string | null;
  commands: CustomCommandInfo[];
}

export function isTraceParams(value: unknown): value is TraceParams {
  if (typeof value !== "object" || value === null) {
    return false;
  }
  const v = value as Record<string, unknown>;
  const ev = v["event"] as Record<string, unknown> | undefined;
  return typeof v["runId"] === "string" && typeof ev === "object" && ev !== null && typeof ev["type"] === "string";
}

export function isProposalParams(value: unknown): value is ProposalParams {
  if (typeof value !== "object" || value === null) {
    return false;
  }
  const v = value as Record<string, unknown>;
  return typeof v["runId"] === "string" && Array.isArray(v["files"]);
}
