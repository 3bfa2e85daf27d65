/** Arguments of the server's commands, and finding the node under the cursor: pure. */

export interface Pos { line: number; character: number }

export interface Anchor {
  /** Where the node's text starts in the document. */
  pos: Pos;
  /** Its localId (what the server's commands take as `node`). */
  node: string;
}

export function comparePos(a: Pos, b: Pos): number {
  return a.line !== b.line ? a.line - b.line : a.character - b.character;
}

/** The node whose text contains `pos`: the last anchor at or before it. */
export function nodeAt(anchors: readonly Anchor[], pos: Pos): string | undefined {
  let best: Anchor | undefined;
  for (const a of anchors) {
    if (comparePos(a.pos, pos) <= 0 && (!best || comparePos(a.pos, best.pos) >= 0)) best = a;
  }
  return best?.node;
}

/**
 * The node id in an inlay hint's label or tooltip: `[a7x2] model`, `︱›a7x2`, `︱a7x2'`.
 */
export function nodeIdInLabel(label: string): string | undefined {
  const bracket = /\[([0-9A-Za-z][0-9A-Za-z'-]{2,})\]/.exec(label);
  if (bracket) return bracket[1];
  const bare = /^[^0-9A-Za-z]*([0-9A-Za-z][0-9A-Za-z'-]{2,})/.exec(label.trim());
  return bare ? bare[1] : undefined;
}

/** Dialogue mode: each node's block is headed `[id] author · time`. */
export function dialogueAnchors(text: string): Anchor[] {
  const anchors: Anchor[] = [];
  const lines = text.split(/\r?\n/);
  const head = /^\[([0-9a-zA-Z'-]{3,})\] \S.* · /;
  lines.forEach((line, i) => {
    const m = head.exec(line);
    if (m) anchors.push({ pos: { line: i, character: 0 }, node: m[1] });
  });
  return anchors;
}

/** An arrow-command line (`→ …`, `-> …`), as the server's lexicon recognises them
 *  (server/loom/commands/lexicon.py; tests/unit/test_lexicon.py checks the two agree). */
export function isArrowLine(line: string): boolean {
  return /^[^\S\r\n]*(?:→|-->|->|=>|⇒|⟶|➜)/.test(line);
}

/** The arrow-command line to run: the cursor's line if it is one, else the nearest above. */
export function commandLineAt(lines: readonly string[], line: number): number | undefined {
  for (let i = Math.min(line, lines.length - 1); i >= 0; i--) {
    if (isArrowLine(lines[i])) return i;
    if (i < line && lines[i].trim() === "") break;
  }
  return undefined;
}

/** What to continue with: n and tokens (a keybinding's args), and `options`, the text the
 *  writer typed after `→ continue` (`temperature:0.7 n:2 models:a,b`). */
export interface ContinueGiven { n?: number; tokens?: number; options?: string }
export interface ContinueArgs extends ContinueGiven { uri: string }

/** `loom.continue`'s (and `loom.suggest`'s) arguments. The options go as typed: the server
 *  reads them with the grammar of a typed `→ continue` line, with its ✗ errors, so the
 *  extension knows no option's name and takes every option the server declares. */
export function continueArgs(uri: string, given: ContinueGiven = {}): ContinueArgs {
  const args: ContinueArgs = { uri };
  if (given.n !== undefined) args.n = given.n;
  if (given.tokens !== undefined) args.tokens = given.tokens;
  const options = given.options?.trim();
  if (options) args.options = options;
  return args;
}

/** A command's argument as what to continue with: a string is the options as typed; an
 *  object may give `n`, `tokens` and `options` (a keybinding's `args`). */
export function continueGiven(arg: unknown): ContinueGiven {
  if (typeof arg === "string") return { options: arg };
  if (!arg || typeof arg !== "object") return {};
  const a = arg as Record<string, unknown>;
  const out: ContinueGiven = {};
  if (typeof a.n === "number") out.n = a.n;
  if (typeof a.tokens === "number") out.tokens = a.tokens;
  if (typeof a.options === "string") out.options = a.options;
  return out;
}

/** What the server said of the options typed so far (`loom/continueOptions`), as the
 *  prompt shows it under the input: the ✗ as an error, a typo's reading as information,
 *  nothing when they read as typed. */
export function optionsCheck(r: { ok?: boolean; message?: string; data?: { corrected?: boolean } } | undefined):
  { message: string; severity: "error" | "info" } | undefined {
  if (!r || typeof r.message !== "string") return undefined;
  if (r.ok === false) return { message: r.message.replace(/\n\s*/g, " · "), severity: "error" };
  return r.data?.corrected ? { message: r.message, severity: "info" } : undefined;
}

export function cycleArgs(uri: string, node: string, delta: 1 | -1): { uri: string; node: string; delta: number } {
  return { uri, node, delta };
}

export function branchArgs(uri: string, node: string): { uri: string; node: string } {
  return { uri, node };
}

export function annotateArgs(uri: string, node: string, text: string): { uri: string; node: string; text: string } {
  return { uri, node, text };
}

export function runArgs(uri: string, line: number): { uri: string; line: number } {
  return { uri, line };
}

/** The export formats the extension offers: Loom's own, then the other looms' files. */
export const EXPORT_FORMATS: { label: string; description: string; ext: string }[] = [
  { label: "openloom", description: "Open Loom 2.0 JSON (lossless)", ext: "json" },
  { label: "md", description: "Markdown of the current path", ext: "md" },
  { label: "loom", description: "the Loom Protocol", ext: "loom" },
  { label: "socketteer", description: "socketteer/loom's JSON", ext: "json" },
  { label: "loomsidian", description: "loomsidian's data.json (one note)", ext: "json" },
  { label: "miniloom", description: "MiniLoom's JSON", ext: "json" },
  { label: "tapestry", description: "a Tapestry Loom weave", ext: "tapestry" },
];

/** The bytes of an export answer: its text, or a binary file (a weave) sent as base64. */
export function exportBytes(r: { text?: string; base64?: string }): Uint8Array | undefined {
  if (r.base64 !== undefined) return Uint8Array.from(Buffer.from(r.base64, "base64"));
  return r.text === undefined ? undefined : new TextEncoder().encode(r.text);
}

/** What the other loom cannot hold: the answer's lines after its first, as one line. */
export function exportNotes(message: string | undefined): string {
  return (message ?? "").split("\n").slice(1).map((l) => l.trim()).filter(Boolean).join("; ");
}

/** `loom.fill`'s arguments: the selection (within one node) and how many alternatives. */
export function fillArgs(uri: string, start: Pos, end: Pos, n?: number): Record<string, unknown> {
  return {
    uri, line: start.line, character: start.character, endLine: end.line, endCharacter: end.character,
    ...(n !== undefined ? { n } : {}),
  };
}

/** How many alternatives the writer typed ("3"): 1 to 10, else why not. */
export function fillCount(typed: string): number | string {
  const n = Number(typed.trim());
  return Number.isInteger(n) && n >= 1 && n <= 10 ? n : "a whole number from 1 to 10";
}
