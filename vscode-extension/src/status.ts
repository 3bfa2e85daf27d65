/** The status-bar text for the current node and a generation in progress: pure. */

import type { StatusNotification } from "./protocol";

export interface StatusView {
  text: string;
  tooltip: string;
  /** Clicking cancels the generation. */
  cancellable: boolean;
}

export function statusView(s: Partial<StatusNotification> | undefined): StatusView | undefined {
  if (!s) return undefined;
  if (s.generating) {
    const what = s.message ? `: ${s.message}` : "";
    return { text: `$(sync~spin) Loom generating…`, tooltip: `Generating${what}. Click to cancel.`, cancellable: true };
  }
  const label = s.label?.trim();
  if (!label && !s.node) return undefined;
  const depth = s.depth !== null && s.depth !== undefined ? ` · depth ${s.depth}` : "";
  const text = `$(git-commit) ${label || `[${s.node ?? "?"}]`}${depth}`;
  const tooltip = [s.message, `Loom: your position${s.node ? ` [${s.node}]` : ""}`].filter(Boolean).join("\n");
  return { text, tooltip, cancellable: false };
}
