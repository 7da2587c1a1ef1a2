/**
 * Rebuilds the sandbox version of a file from the current text and the unified diff of a
 * proposal, for the read-only side of the per-file diff view. Used only when the server did not
 * send the new content itself. A diff that does not apply yields an error, never a guess.
 */

export class PatchError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "PatchError";
  }
}

interface Hunk {
  oldStart: number;
  lines: string[];
}

const HUNK = /^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@/;

function parseHunks(diff: string): { hunks: Hunk[]; noNewlineAtEnd: boolean } {
  const hunks: Hunk[] = [];
  let current: Hunk | undefined;
  let lastSign = "";
  let noNewlineAtEnd = false;
  for (const line of diff.split("\n")) {
    const m = HUNK.exec(line);
    if (m !== null) {
      current = { oldStart: Number(m[1]), lines: [] };
      hunks.push(current);
      continue;
    }
    if (current === undefined) {
      continue; // file headers (---, +++, diff --git, index …)
    }
    if (line.startsWith("\\")) {
      // "\ No newline at end of file" applies to the line before it.
      if (lastSign === "+" || lastSign === " ") {
        noNewlineAtEnd = true;
      }
      continue;
    }
    const sign = line.charAt(0);
    if (sign === " " || sign === "-" || sign === "+") {
      current.lines.push(line);
      lastSign = sign;
    } else if (line === "") {
      // a trailing newline of the diff text, or an empty context line some tools emit bare
      current.lines.push(" ");
      lastSign = " ";
    }
  }
  for (const h of hunks) {
    while (h.lines.length > 0 && h.lines[h.lines.length - 1] === " ") {
      h.lines.pop();
    }
  }
  return { hunks, noNewlineAtEnd };
}

/** Apply a unified diff to `original`; `original` is "" for a created file. */
export function applyUnifiedDiff(original: string, diff: string): string {
  const { hunks, noNewlineAtEnd } = parseHunks(diff);
  if (hunks.length === 0) {
    return original;
  }
  const src = original === "" ? [] : original.replace(/\n$/, "").split("\n");
  const out: string[] = [];
  let pos = 0;
  for (const hunk of hunks) {
    const start = Math.max(0, hunk.oldStart - 1);
    if (start < pos || start > src.length) {
      throw new PatchError(`hunk at line ${hunk.oldStart} is out of order or past the end`);
    }
    out.push(...src.slice(pos, start));
    pos = start;
    for (const line of hunk.lines) {
      const text = line.slice(1);
      if (line.startsWith("+")) {
        out.push(text);
        continue;
      }
      if (src[pos] !== text) {
        throw new PatchError(`line ${pos + 1} does not match the diff (the file changed since the run)`);
      }
      if (line.startsWith(" ")) {
        out.push(text);
      }
      pos += 1;
    }
  }
  out.push(...src.slice(pos));
  if (out.length === 0) {
    return "";
  }
  return out.join("\n") + (noNewlineAtEnd ? "" : "\n");
}
