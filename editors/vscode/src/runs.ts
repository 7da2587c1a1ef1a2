/**
 * The client's view of the agent runs: folds the `driveros/trace` events and
 * `driveros/proposal` notifications of each run into a state the trace view, the status bar and
 * the pickers read. No agent logic: it only records what the server reported.
 */

import type { CouncilVerdict, ProposalFileParams, TraceEvent, TraceLocation, Usage } from "./events";

export type RunStatus = "running" | "finished";

function isPosition(p: unknown): boolean {
  const pos = p as { line?: unknown; character?: unknown } | null;
  return typeof pos === "object" && pos !== null && typeof pos.line === "number" && typeof pos.character === "number";
}

/** A well-formed `file:` Location: a click opens it with `vscode.open`, so no other scheme. */
function isFileLocation(loc: unknown): loc is TraceLocation {
  const l = loc as Partial<TraceLocation> | null;
  return (
    typeof l === "object" && l !== null && typeof l.uri === "string" && l.uri.startsWith("file:") &&
    typeof l.range === "object" && l.range !== null && isPosition(l.range.start) && isPosition(l.range.end)
  );
}

export interface ToolItem {
  kind: "tool";
  call: TraceEvent;
  result?: TraceEvent;
  /** The places the result names (a semantic tool's answer), as the server located them. */
  locations?: TraceLocation[];
}

export interface StreamItem {
  kind: "thinking" | "text";
  text: string;
}

export interface EventItem {
  kind: "event";
  event: TraceEvent;
}

export type TurnItem = ToolItem | StreamItem | EventItem;

export interface TurnState {
  turn: number;
  items: TurnItem[];
  finished?: TraceEvent;
}

export interface RunState {
  id: string;
  task: string;
  status: RunStatus;
  provider: string;
  model: string;
  startedAt?: number;
  updatedAt?: number;
  turns: TurnState[];
  /** Events that belong to no turn (memory recall/store, unknown kinds). */
  notes: TraceEvent[];
  usage: Usage;
  result?: TraceEvent;
  proposal?: ProposalFileParams[];
  rationale?: string;
  /** The council's verdict on the proposal, when the server sent one. */
  council?: CouncilVerdict;
  /** True from a proposal until the user accepted or rejected it. */
  proposalPending: boolean;
  /** The server's state of the run (running, proposed, accepted, rejected, …) when known. */
  serverState?: string;
  /**
   * Added to a resumed run's turn numbers: the turns shown before, when the server numbered the
   * follow-up's turns from 1 again (an older driveros-lsp); 0 when it numbers the whole run.
   */
  turnOffset: number;
  /** The last turn shown when the run was resumed, until its first turn says how it counts. */
  resumedAfter?: number;
  /** Checkpoint events a revert dropped: shown as reverted, their number free again. */
  reverted: Set<TraceEvent>;
  /** Usage and time of the parts of the run before it was resumed. */
  base?: { usage: Usage; durationMs: number };
  /** Number of events folded in: lets views skip work when nothing changed. */
  version: number;
}

/** One item of the `driveros.agent.list` answer. */
export interface RunSummary {
  runId: string;
  task?: string;
  state?: string;
  outcome?: string | null;
  files?: string[];
  conflicts?: string[];
  startedAt?: number;
  error?: string | null;
}

type Listener = (run: RunState | undefined) => void;

function addUsage(a: Usage, b: Usage | undefined): Usage {
  if (b === undefined) {
    return a;
  }
  const sum = (x: number | undefined, y: number | undefined): number => (x ?? 0) + (y ?? 0);
  return {
    input_tokens: sum(a.input_tokens, b.input_tokens),
    output_tokens: sum(a.output_tokens, b.output_tokens),
    total_tokens: sum(a.total_tokens, b.total_tokens),
    cache_read_tokens: sum(a.cache_read_tokens, b.cache_read_tokens),
    cache_write_tokens: sum(a.cache_write_tokens, b.cache_write_tokens),
    reasoning_tokens: sum(a.reasoning_tokens, b.reasoning_tokens),
    ...addCost(a, b),
  };
}

/** The server's rule (driveros.llm.Usage): unknown once any part is unknown, never 0 for it. */
function addCost(a: Usage, b: Usage): Pick<Usage, "cost_usd" | "cost_unknown"> {
  if (a.cost_unknown === true || b.cost_unknown === true) {
    return { cost_usd: null, cost_unknown: true };
  }
  const known = [a.cost_usd, b.cost_usd].filter((c): c is number => typeof c === "number");
  return known.length === 0 ? {} : { cost_usd: known.reduce((x, y) => x + y, 0) };
}

export class RunStore {
  private readonly runs = new Map<string, RunState>();
  private readonly listeners = new Set<Listener>();

  /** Subscribe to changes; the argument is the run that changed (undefined: all of them). */
  onDidChange(listener: Listener): { dispose(): void } {
    this.listeners.add(listener);
    return { dispose: () => this.listeners.delete(listener) };
  }

  get(runId: string): RunState | undefined {
    return this.runs.get(runId);
  }

  /** Every run, newest first. */
  all(): RunState[] {
    return [...this.runs.values()].reverse();
  }

  running(): RunState[] {
    return this.all().filter((r) => r.status === "running");
  }

  pendingProposals(): RunState[] {
    return this.all().filter((r) => r.proposalPending);
  }

  /** Record a run the client started before its first event arrives. */
  started(runId: string, task: string): RunState {
    const run = this.ensure(runId);
    if (run.task === "") {
      run.task = task;
    }
    this.fire(run);
    return run;
  }

  /** Fold one trace event (and the locations it names) into its run. */
  apply(runId: string, incoming: TraceEvent, locations: readonly TraceLocation[] = []): RunState {
    const run = this.ensure(runId);
    if (run.resumedAfter !== undefined && incoming.type === "turn_started" && typeof incoming.turn === "number") {
      // driveros-lsp numbers a follow-up's turns after the run's earlier ones; an older one
      // started from 1 again: continue after the turns already shown.
      run.turnOffset = incoming.turn <= run.resumedAfter ? run.resumedAfter : 0;
      run.resumedAfter = undefined;
    }
    const event = typeof incoming.turn === "number" && run.turnOffset > 0 ? { ...incoming, turn: incoming.turn + run.turnOffset } : incoming;
    run.version += 1;
    if (typeof event.ts === "number") {
      run.startedAt ??= event.ts;
      run.updatedAt = event.ts;
    }
    if (run.status === "finished" && (event.type === "run_started" || event.type === "turn_started")) {
      // A proposal rejected with feedback resumes the same run.
      run.status = "running";
      run.proposalPending = false;
    }
    switch (event.type) {
      case "run_started":
        if (run.turns.length > 0) {
          // Resumed with feedback: the event's task is the feedback, the next user turn.
          run.resumedAfter = Math.max(...run.turns.map((t) => t.turn));
          run.turnOffset = 0;
          run.base = { usage: run.usage, durationMs: (run.base?.durationMs ?? 0) + (run.result?.duration_ms ?? 0) };
          run.result = undefined;
          this.turn(run, run.resumedAfter + 1).items.push({ kind: "event", event: { ...event, type: "feedback", text: event.task ?? "" } });
        } else {
          run.task = event.task ?? run.task;
        }
        run.provider = event.provider ?? run.provider;
        run.model = event.model ?? run.model;
        break;
      case "turn_started":
        this.turn(run, event.turn ?? run.turns.length + 1);
        break;
      case "thinking":
      case "text":
        this.stream(run, event);
        break;
      case "tool_call":
        this.turn(run, event.turn).items.push({ kind: "tool", call: event });
        break;
      case "tool_result":
        this.toolResult(run, event, locations);
        break;
      case "turn_finished": {
        const turn = this.turn(run, event.turn);
        turn.finished = event;
        run.usage = addUsage(run.usage, event.usage);
        break;
      }
      case "result":
        run.result = event;
        run.status = "finished";
        if (event.usage !== undefined) {
          run.usage = addUsage(run.base?.usage ?? {}, event.usage);
        }
        break;
      default:
        if (typeof event.turn === "number") {
          this.turn(run, event.turn).items.push({ kind: "event", event });
        } else {
          run.notes.push(event);
        }
    }
    this.fire(run);
    return run;
  }

  /**
   * Record a `driveros/proposal` notification. The server re-sends it as the review goes on
   * (files left pending, `state` accepted/rejected/canceled); an empty list keeps the last
   * files on display but ends the review.
   */
  proposal(runId: string, files: ProposalFileParams[], rationale?: string, state?: string, council?: CouncilVerdict | null): RunState {
    const run = this.ensure(runId);
    if (council !== undefined && council !== null) {
      run.council = council;
    }
    if (files.length > 0 || run.proposal === undefined) {
      run.proposal = files;
    }
    if (rationale !== undefined && rationale !== "") {
      run.rationale = rationale;
    }
    if (state !== undefined) {
      run.serverState = state;
    }
    run.proposalPending = (state === undefined || state === "proposed") && files.length > 0;
    run.version += 1;
    this.fire(run);
    return run;
  }

  /** Align with the server's `driveros.agent.list` answer (the truth on states and pending files). */
  sync(summaries: readonly RunSummary[]): void {
    for (const s of summaries) {
      const run = this.ensure(s.runId);
      if (run.task === "" && typeof s.task === "string") {
        run.task = s.task;
      }
      if (s.state !== undefined) {
        run.serverState = s.state;
        if (s.state !== "running" && run.status === "running") {
          run.status = "finished";
          // A canceled or failed run may end without a result event: keep the server's word.
          run.result ??= { type: "result", run_id: run.id, outcome: s.outcome ?? s.state, error: s.error ?? undefined };
        }
        run.proposalPending = s.state === "proposed" && (s.files?.length ?? run.proposal?.length ?? 0) > 0;
      }
      run.version += 1;
    }
    this.fire(undefined);
  }

  /** The user accepted or rejected the proposal of a run. */
  settled(runId: string): void {
    const run = this.runs.get(runId);
    if (run !== undefined) {
      run.proposalPending = false;
      run.version += 1;
      this.fire(run);
    }
  }

  /** The run was reverted to checkpoint `to`: the later checkpoints left it (the next turn
   * that changes a file takes number `to + 1` again). */
  reverted(runId: string, to: number): void {
    const run = this.runs.get(runId);
    if (run === undefined) {
      return;
    }
    for (const turn of run.turns) {
      for (const item of turn.items) {
        if (item.kind === "event" && item.event.type === "checkpoint" && (item.event.checkpoint ?? 0) > to) {
          run.reverted.add(item.event);
        }
      }
    }
    run.version += 1;
    this.fire(run);
  }

  /** The server went away: runs it did not finish will never finish. */
  serverStopped(): void {
    for (const run of this.runs.values()) {
      if (run.status === "running") {
        run.status = "finished";
        run.result ??= { type: "result", run_id: run.id, outcome: "canceled", error: "server stopped" };
        run.version += 1;
      }
    }
    this.fire(undefined);
  }

  clearFinished(): void {
    for (const [id, run] of this.runs) {
      if (run.status === "finished" && !run.proposalPending) {
        this.runs.delete(id);
      }
    }
    this.fire(undefined);
  }

  private ensure(runId: string): RunState {
    let run = this.runs.get(runId);
    if (run === undefined) {
      run = {
        id: runId,
        task: "",
        status: "running",
        provider: "",
        model: "",
        turns: [],
        notes: [],
        usage: {},
        proposalPending: false,
        turnOffset: 0,
        reverted: new Set(),
        version: 0,
      };
      this.runs.set(runId, run);
    }
    return run;
  }

  private turn(run: RunState, n: number | undefined): TurnState {
    const number = n ?? Math.max(1, run.turns.length);
    let turn = run.turns.find((t) => t.turn === number);
    if (turn === undefined) {
      turn = { turn: number, items: [] };
      run.turns.push(turn);
      run.turns.sort((a, b) => a.turn - b.turn);
    }
    return turn;
  }

  private stream(run: RunState, event: TraceEvent): void {
    const kind = event.type === "thinking" ? "thinking" : "text";
    const turn = this.turn(run, event.turn);
    const last = turn.items[turn.items.length - 1];
    // Streamed fragments are coalesced into the item they continue.
    if (event.delta !== false && last !== undefined && last.kind === kind) {
      last.text += event.text ?? "";
    } else {
      turn.items.push({ kind, text: event.text ?? "" });
    }
  }

  private toolResult(run: RunState, event: TraceEvent, locations: readonly TraceLocation[]): void {
    const kept = Array.isArray(locations) ? locations.filter(isFileLocation) : [];
    const located = kept.length > 0 ? { locations: kept } : {};
    for (const turn of [...run.turns].reverse()) {
      for (const item of turn.items) {
        if (item.kind === "tool" && item.call.call_id === event.call_id && item.result === undefined) {
          item.result = event;
          Object.assign(item, located);
          return;
        }
      }
    }
    this.turn(run, event.turn).items.push({ kind: "tool", call: { ...event, type: "tool_call" }, result: event, ...located });
  }

  private fire(run: RunState | undefined): void {
    for (const listener of this.listeners) {
      listener(run);
    }
  }
}
