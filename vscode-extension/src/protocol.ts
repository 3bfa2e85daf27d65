/** The Loom server's custom protocol (docs/lsp.md): request and notification shapes. */

export const Methods = {
  read: "loom/read",
  save: "loom/save",
  trees: "loom/trees",
  nodeInfo: "loom/nodeInfo",
  newTree: "loom/newTree",
  import: "loom/import",
  export: "loom/export",
  status: "loom/status",
  doctor: "loom/doctor",
  treesChanged: "loom/treesChanged",
  documentChanged: "loom/documentChanged",
  clean: "loom/clean",
  exploring: "loom/exploring",
  continueOptions: "loom/continueOptions",
} as const;

/** Server-side commands (workspace/executeCommand, one object argument). */
export const ServerCommands = {
  continue: "loom.continue",
  fill: "loom.fill",
  branch: "loom.branch",
  cycleSibling: "loom.cycleSibling",
  annotate: "loom.annotate",
  run: "loom.run",
  commit: "loom.commit",
  open: "loom.open",
  cancel: "loom.cancel",
  split: "loom.split",
  suggest: "loom.suggest",
  acceptSuggestion: "loom.acceptSuggestion",
  dismissSuggestion: "loom.dismissSuggestion",
  toggleProbabilities: "loom.toggleProbabilities",
  toggleScores: "loom.toggleScores",
  siblings: "loom.siblings",
  switchTo: "loom.switchTo",
  act: "loom.act",
  search: "loom.search",
  models: "loom.models",
  chooseModel: "loom.chooseModel",
  explore: "loom.explore",
  stopExploring: "loom.stopExploring",
} as const;

/**
 * `loom/exploring`: an exploration's progress, sent instead of work-done progress to a client
 * that declares `experimental.loomExplorationProgress` (VS Code's client shows work-done
 * progress in the status bar, where it has no Cancel button).
 */
export interface ExploringNotification {
  tree: string;
  token: string;
  kind: "begin" | "report" | "end";
  title: string;
  message: string;
}

/** `loom.models`: what continue can ask, and what it asks in the document's tree. */
export interface ModelsResult {
  models: { name: string; description: string; ready: boolean; default: boolean }[];
  current: string | null;
  picked: string | null;
  /** The sampler presets of config.toml, and the one picked for the tree. */
  presets?: { name: string; description: string }[];
  preset?: string | null;
}

/** One hit of `loom.search`. */
export interface SearchHit {
  node: string;
  localId: string;
  label: string;
  tree: string;
  treeTitle: string;
  snippet: string;
  excerpt: string;
  marks: string;
  author: string;
  uri: string;
}

export interface ReadParams { uri: string }
export interface ReadResult {
  uri: string;
  text: string;
  readOnly: boolean;
  languageId: string;
  version: number | string;
}

export interface SaveParams {
  uri: string;
  text: string;
  /** Why VS Code saves (an extension of the contract): auto-saves should not run command lines. */
  reason?: "manual" | "afterDelay" | "focusOut";
}
/** How the writer may answer a save that asked first (issue 47: it would wipe out the path). */
export type SaveChoice = "branch" | "replace";
export interface SaveQuestion {
  question: string;
  choices: { choice: SaveChoice; title: string }[];
}
export interface SaveResult { ok: boolean; message: string; uri: string; data?: { confirm?: SaveQuestion } }

export interface TreeSummary {
  id: string;
  title: string;
  mode: string;
  nodes: number;
  uri: string;
  /** The path document through the participant's position (when the server gives it). */
  pathUri?: string;
}

export function treeIdOf(t: TreeRef): string {
  return typeof t === "string" ? t : t.id;
}

/** Custom requests answer `{error: "✗ CODE: message"}` for a Loom error. */
export function errorOf(result: unknown): string | undefined {
  if (result && typeof result === "object" && "error" in result) {
    const e = (result).error;
    if (typeof e === "string" && e.length > 0) return e;
  }
  return undefined;
}

export interface LoomNode {
  id: string;
  localId: string;
  label: string;
  author: string;
  authorType: string;
  summary: string;
  depth: number;
  created: number | string;
  uri: string;
  siblingIndex: number;
  siblingCount: number;
  /** The start of the node's own text (what the view shows first). */
  excerpt?: string;
  /** Where the summary came from, in words: "summary (its first sentence)". */
  summarySource?: string;
  bookmarked?: boolean;
  bookmarkLabel?: string | null;
  tags?: string[];
  rating?: number | null;
}

export interface NodeInfoParams {
  tree: string;
  node?: string;
  /** The node under a position of an open document (the server's extension of the contract). */
  uri?: string;
  line?: number;
  character?: number;
  /** Pages: where the siblings' and the children's pages start, and their size (default 100; 0: the path only). */
  siblingsOffset?: number;
  childrenOffset?: number;
  limit?: number;
}
/** The tree of a nodeInfo answer: its id, or the tree itself. */
export type TreeRef = string | { id: string; title?: string; mode?: string };
export interface NodeInfo {
  tree: TreeRef;
  node: LoomNode;
  path: LoomNode[];
  /** A page of the siblings (the node among them, or not) and of the children. */
  siblings: LoomNode[];
  children: LoomNode[];
  /** How many there are in all, where the page starts, where the next starts (null: the last). */
  siblingsTotal?: number;
  siblingsOffset?: number;
  siblingsNext?: number | null;
  childrenTotal?: number;
  childrenOffset?: number;
  childrenNext?: number | null;
}

export interface NewTreeParams { title: string; mode?: "buffer" | "dialogue"; text?: string }
export interface NewTreeResult { tree: string; uri: string }

export interface ImportParams { path: string }
/** Every write request answers Loom's one shape: ok, the ✓/✗ message, and its data. */
export interface Answer { ok?: boolean; message?: string; error?: string }
export interface ImportResult extends Answer { trees: { id: string; title: string; uri: string; pathUri?: string }[] }

export type ExportFormat =
  "openloom" | "md" | "loom" | "socketteer" | "loomsidian" | "miniloom" | "tapestry";
export interface ExportParams { tree: string; format: ExportFormat; path?: string }
/** `text` for a text format; `base64` (and its `extension`) for a binary one (a weave). */
export interface ExportResult extends Answer {
  text?: string; base64?: string; extension?: string; path?: string;
}

export interface StatusParams { uri: string }
export interface StatusResult {
  label: string;
  node: string | null;
  depth: number | null;
  generating: boolean;
  participant?: string;
}

export interface CollaboratorStatus {
  name: string;
  busy: boolean;
  node: string | null;
  depth: number | null;
}

export interface StatusNotification {
  uri: string;
  label: string;
  node: string | null;
  depth: number | null;
  generating: boolean;
  message?: string;
  /** The tree's collaborator, when one has been asked or triggered. */
  collaborator?: CollaboratorStatus | null;
  /** The tree's title. */
  title?: string | null;
}

export interface DocumentChangedNotification { uri: string }

/** `loom/treesChanged`: these trees changed, here or in another process. */
export interface TreesChangedNotification { trees: string[] }

/** At `version` the document holds nothing uncommitted: what it shows is the tree's. */
export interface CleanNotification { uri: string; version: number }

/** The settings the server reads (initializationOptions, didChangeConfiguration "loom"). */
export interface ServerSettings {
  database?: string;
  participant?: string;
  defaultN: number;
  defaultTokens: number;
  inlayHints: boolean;
  /** Which node boundaries get a marker: where siblings offer a choice, or all. */
  markers?: "siblings" | "all";
  runOnSave: boolean;
  documentProvider: "textDocumentContent" | "fileSystem" | "bufReadCmd";
  /** Colour model text by token probability. */
  probabilities?: boolean;
  /** Continue from an alternative token after branching with it. */
  alternativeContinues?: boolean;
  /** Offer the path's continuations as inline suggestions. */
  inlineSuggestions?: boolean;
}

/** `loom/doctor`: the checks `loom doctor` prints. */
export interface DoctorCheck {
  section: string;
  status: "ok" | "warn" | "error" | "info";
  text: string;
  hint?: string | null;
}
export interface DoctorResult {
  ok: boolean;
  text: string;
  checks: DoctorCheck[];
}
