/** `loom:` URIs (docs/lsp.md): pure helpers, no VS Code imports. */

export const SCHEME = "loom";

export type LoomTarget =
  | { kind: "path"; tree: string; node: string }
  | { kind: "tree"; tree: string }
  | { kind: "doc"; name: string }
  | { kind: "trace"; participant: string };

/** Parse `loom://path/TREE/NODE[/TITLE]`, `loom://tree/TREE[/TITLE]`, `loom://doc/NAME`, `loom://trace/WHO`. */
export function parseLoomUri(uri: string): LoomTarget | undefined {
  const m = /^loom:(?:\/\/)?([^/?#]*)\/?([^?#]*)/.exec(uri);
  if (!m) return undefined;
  const kind = m[1];
  const tail = m[2] ?? "";
  const parts = tail.split("/").filter((p) => p.length > 0);
  const dec = (s: string): string => {
    try {
      return decodeURIComponent(s);
    } catch {
      return s;
    }
  };
  // A last segment after the ids is the tree's title (it names the tab): ignored here.
  if (kind === "path" && (parts.length === 2 || parts.length === 3)) return { kind, tree: dec(parts[0]), node: dec(parts[1]) };
  if (kind === "tree" && (parts.length === 1 || parts.length === 2)) return { kind, tree: dec(parts[0]) };
  if (kind === "doc" && tail.length > 0) return { kind, name: dec(tail) };
  if (kind === "trace" && parts.length === 1) return { kind, participant: dec(parts[0]) };
  return undefined;
}

export function pathUri(tree: string, node: string): string {
  return `loom://path/${tree}/${node}`;
}

export function treeUri(tree: string): string {
  return `loom://tree/${tree}`;
}

export function docUri(name: string): string {
  return `loom://doc/${encodeURIComponent(name)}`;
}

export function traceUri(participant: string): string {
  return `loom://trace/${encodeURIComponent(participant)}`;
}

/** The language a loom: document gets: Markdown for documents, `loom` for everything else. */
export function languageIdFor(uri: string): string | undefined {
  const t = parseLoomUri(uri);
  if (!t) return undefined;
  return t.kind === "doc" ? "markdown" : "loom";
}

/** The tree a URI belongs to (path and overview URIs), if any. */
export function treeOf(uri: string): string | undefined {
  const t = parseLoomUri(uri);
  return t && (t.kind === "path" || t.kind === "tree") ? t.tree : undefined;
}

/** A short title for a loom: document (editor tabs, quick picks). */
export function describeUri(uri: string): string {
  const t = parseLoomUri(uri);
  if (!t) return uri;
  switch (t.kind) {
    case "path":
      return `path to ${t.node}`;
    case "tree":
      return "tree overview";
    case "doc":
      return t.name;
    case "trace":
      return `trace of ${t.participant}`;
  }
}
