/**
 * Ghost text and next-edit suggestions: the server's LSP 3.18 `textDocument/inlineCompletion`
 * through vscode-languageclient's inline completion feature (a proposed feature in 9.x). VS Code
 * shows the first item as ghost text; Tab accepts it, Ctrl+Right accepts it word by word, and
 * the item's command (`driveros.inlineCompletion.accepted`, forwarded to the server) counts the
 * acceptance locally. Debounce, cancellation, context and post-processing are the server's.
 */

import { type LanguageClient, ProposedFeatures } from "vscode-languageclient/node";

/** Register the inline completion feature on `client` (before it starts). */
export function registerInlineCompletion(client: LanguageClient): void {
  client.registerFeatures(ProposedFeatures.createAll(client));
}
