/** Small display helpers shared by the trace view, the status bar and the pickers. */

/** `$0.0123`, `cost unknown`, or "" when nothing was priced (no usage yet). */
export function formatCost(usage: { cost_usd?: number | null; cost_unknown?: boolean } | undefined): string {
  if (usage?.cost_unknown === true) {
    return "cost unknown";
  }
  return typeof usage?.cost_usd === "number" ? `$${usage.cost_usd.toFixed(4)}` : "";
}

export function formatTokens(n: number | undefined): string {
  const v = n ?? 0;
  if (v < 1000) {
    return `${v} tok`;
  }
  if (v < 1_000_000) {
    return `${(v / 1000).toFixed(v < 10_000 ? 1 : 0)}k tok`;
  }
  return `${(v / 1_000_000).toFixed(1)}M tok`;
}

export function formatDuration(ms: number | undefined): string {
  const v = Math.max(0, ms ?? 0);
  if (v < 1000) {
    return `${Math.round(v)} ms`;
  }
  if (v < 60_000) {
    return `${(v / 1000).toFixed(1)} s`;
  }
  const minutes = Math.floor(v / 60_000);
  const seconds = Math.round((v % 60_000) / 1000);
  return `${minutes} m ${String(seconds).padStart(2, "0")} s`;
}

/** The first non-empty line of a text, shortened to `max` characters. */
export function firstLine(text: string | undefined, max = 80): string {
  const line = (text ?? "").split("\n").find((l) => l.trim() !== "") ?? "";
  const trimmed = line.trim();
  return trimmed.length > max ? `${trimmed.slice(0, max - 1)}…` : trimmed;
}

/** A one-line rendering of tool arguments: the most telling argument first. */
export function formatArguments(args: Record<string, unknown> | undefined): string {
  if (args === undefined) {
    return "";
  }
  for (const key of ["command", "path", "pattern"]) {
    const v = args[key];
    if (typeof v === "string") {
      return firstLine(v, 60);
    }
  }
  const json = JSON.stringify(args);
  return json === "{}" ? "" : firstLine(json, 60);
}
