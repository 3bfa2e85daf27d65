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
  const c = s.collaborator;
  // "Collaborator active at [x], depth:n" (seed 001's visibility line), while it works
  const collab = c?.busy ? ` · $(hubot) ${c.name} at [${c.node ?? "?"}]` : "";
  const text = `$(git-commit) ${label || `[${s.node ?? "?"}]`}${depth}${collab}`;
  const active = c?.busy ? `${c.name[0].toUpperCase()}${c.name.slice(1)} active at [${c.node ?? "?"}], depth:${c.depth ?? "?"}` : undefined;
  const tooltip = [s.message, `Loom: your position${s.node ? ` [${s.node}]` : ""}`, active].filter(Boolean).join("\n");
  return { text, tooltip, cancellable: false };
}
