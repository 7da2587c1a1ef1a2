/**
 * A small stand-in for the `vscode` module, enough for the logic that does not need the editor
 * (tree items, status text, settings, content providers, command registration). setup.ts makes
 * `require("vscode")` resolve here. The real editor is exercised by test/e2e.
 */

import { readFile } from "node:fs/promises";
import * as path from "node:path";

type Listener<T> = (e: T) => unknown;

export class EventEmitter<T> {
  private listeners: Listener<T>[] = [];
  event = (listener: Listener<T>): { dispose(): void } => {
    this.listeners.push(listener);
    return { dispose: () => (this.listeners = this.listeners.filter((l) => l !== listener)) };
  };
  fire(e: T): void {
    this.listeners.forEach((l) => l(e));
  }
  dispose(): void {
    this.listeners = [];
  }
}

export class Uri {
  private constructor(
    readonly scheme: string,
    readonly path: string,
    readonly query: string,
  ) {}
  static from(parts: { scheme: string; path?: string; query?: string }): Uri {
    return new Uri(parts.scheme, parts.path ?? "", parts.query ?? "");
  }
  static file(p: string): Uri {
    return new Uri("file", p, "");
  }
  static parse(value: string): Uri {
    const u = new URL(value);
    return new Uri(u.protocol.replace(/:$/, ""), decodeURIComponent(u.pathname), u.search.replace(/^\?/, ""));
  }
  static joinPath(base: Uri, ...parts: string[]): Uri {
    return new Uri(base.scheme, path.posix.join(base.path, ...parts), "");
  }
  get fsPath(): string {
    return this.path;
  }
  toString(): string {
    return `${this.scheme}://${this.path}${this.query !== "" ? `?${this.query}` : ""}`;
  }
}

export class Position {
  constructor(
    readonly line: number,
    readonly character: number,
  ) {}
}

export class Range {
  readonly start: Position;
  readonly end: Position;
  constructor(startLine: number, startCharacter: number, endLine: number, endCharacter: number) {
    this.start = new Position(startLine, startCharacter);
    this.end = new Position(endLine, endCharacter);
  }
}

export class ThemeIcon {
  constructor(
    readonly id: string,
    readonly color?: ThemeColor,
  ) {}
}

export class ThemeColor {
  constructor(readonly id: string) {}
}

export class MarkdownString {
  value = "";
  appendCodeblock(code: string, language = ""): this {
    this.value += `\n\`\`\`${language}\n${code}\n\`\`\`\n`;
    return this;
  }
  appendMarkdown(text: string): this {
    this.value += text;
    return this;
  }
}

export enum TreeItemCollapsibleState {
  None = 0,
  Collapsed = 1,
  Expanded = 2,
}

export class TreeItem {
  id?: string;
  description?: string;
  tooltip?: string | MarkdownString;
  iconPath?: ThemeIcon;
  contextValue?: string;
  command?: { command: string; title: string; arguments?: unknown[] };
  constructor(
    readonly label: string,
    readonly collapsibleState: TreeItemCollapsibleState = TreeItemCollapsibleState.None,
  ) {}
}

export enum StatusBarAlignment {
  Left = 1,
  Right = 2,
}

export interface StubStatusBarItem {
  id: string;
  text: string;
  tooltip: string | undefined;
  name: string;
  command: string | undefined;
  backgroundColor: ThemeColor | undefined;
  visible: boolean;
  show(): void;
  dispose(): void;
}

/** What tests set and read back. */
export const state = {
  configuration: {} as Record<string, unknown>,
  statusItems: [] as StubStatusBarItem[],
  commands: new Map<string, (...args: unknown[]) => unknown>(),
  workspaceFolders: [] as { uri: Uri; name: string; index: number }[],
  textDocuments: [] as { uri: Uri; getText(): string }[],
  messages: [] as string[],
  /** Answers window.show*Message calls (gets every argument); default: dismissed. */
  messageAnswer: undefined as ((args: unknown[]) => unknown) | undefined,
  /** Answers window.showQuickPick (gets the items); default: dismissed. */
  quickPickAnswer: undefined as ((items: unknown[]) => unknown) | undefined,
  /** Answers window.showInputBox (gets the options); default: dismissed. */
  inputAnswer: undefined as ((options: unknown) => string | undefined) | undefined,
};

/** A WorkspaceConfiguration over `state.configuration` ({"driveros.model": …} keys). */
function configuration(section: string): Record<string, unknown> {
  const prefix = `${section}.`;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(state.configuration)) {
    if (!key.startsWith(prefix)) {
      continue;
    }
    const parts = key.slice(prefix.length).split(".");
    let node = out;
    parts.slice(0, -1).forEach((p) => {
      node[p] ??= {};
      node = node[p] as Record<string, unknown>;
    });
    node[parts[parts.length - 1] as string] = value;
  }
  return Object.assign(out, {
    get: (key: string, fallback?: unknown): unknown => state.configuration[`${prefix}${key}`] ?? fallback,
    has: (key: string): boolean => `${prefix}${key}` in state.configuration,
  });
}

export const workspace = {
  getConfiguration: configuration,
  get workspaceFolders() {
    return state.workspaceFolders;
  },
  get textDocuments() {
    return state.textDocuments;
  },
  fs: {
    readFile: async (uri: Uri): Promise<Uint8Array> => new Uint8Array(await readFile(uri.fsPath)),
  },
  /** Relative to the first workspace folder holding it, as VS Code's (else the whole path). */
  asRelativePath: (uri: Uri): string => {
    const folder = state.workspaceFolders.find((f) => uri.path.startsWith(`${f.uri.path}/`));
    return folder !== undefined ? uri.path.slice(folder.uri.path.length + 1) : uri.path;
  },
};

export const window = {
  createStatusBarItem(id: string): StubStatusBarItem {
    const item: StubStatusBarItem = {
      id,
      text: "",
      tooltip: undefined,
      name: "",
      command: undefined,
      backgroundColor: undefined,
      visible: false,
      show() {
        item.visible = true;
      },
      dispose() {
        item.visible = false;
      },
    };
    state.statusItems.push(item);
    return item;
  },
  showInformationMessage: async (message: string, ...rest: unknown[]): Promise<unknown> => {
    state.messages.push(message);
    return state.messageAnswer?.([message, ...rest]);
  },
  showQuickPick: async (items: unknown[]): Promise<unknown> => state.quickPickAnswer?.(items),
  showInputBox: async (options: unknown): Promise<string | undefined> => state.inputAnswer?.(options),
  showWarningMessage: async (message: string, ...rest: unknown[]): Promise<unknown> => {
    state.messages.push(message);
    return state.messageAnswer?.([message, ...rest]);
  },
  showErrorMessage: async (message: string, ...rest: unknown[]): Promise<unknown> => {
    state.messages.push(message);
    return state.messageAnswer?.([message, ...rest]);
  },
};

export const commands = {
  registerCommand(id: string, fn: (...args: unknown[]) => unknown): { dispose(): void } {
    if (state.commands.has(id)) {
      throw new Error(`command ${id} registered twice`);
    }
    state.commands.set(id, fn);
    return { dispose: () => state.commands.delete(id) };
  },
  executeCommand: async (): Promise<undefined> => undefined,
};
