/** What the Loom view shows, built from the server's answers: pure, no VS Code imports. */

import { treeIdOf, type LoomNode, type NodeInfo, type TreeSummary } from "./protocol";

export type Role = "tree" | "path" | "sibling" | "child" | "message";

export interface ItemData {
  /** Unique among the view's items (VS Code keeps expansion state by id). */
  id: string;
  role: Role;
  label: string;
  description: string;
  tooltip: string;
  /** Opened on click. */
  uri?: string;
  tree?: string;
  node?: LoomNode;
  icon: string;
  collapsible: boolean;
  /** Expanded initially (the current path under a tree). */
  expanded?: boolean;
  contextValue: string;
}

/** `[localId] author`: how a node is named everywhere in the view. */
export function nodeLabel(n: LoomNode): string {
  const id = n.label && n.label.length > 0 ? n.label : n.localId;
  return `[${id}] ${n.author}`;
}

function cut(text: string, max: number): string {
  const s = text.replace(/\s+/g, " ").trim();
  return s.length > max ? `${s.slice(0, max - 1)}…` : s;
}

/** What a row shows of a node: its own text (the excerpt), else its summary. */
export function summaryOf(n: LoomNode, max = 80): string {
  return cut(n.excerpt && n.excerpt.trim() ? n.excerpt : (n.summary ?? ""), max);
}

/** `★ "label"`, tags and rating: the reader's marks on a node. */
export function marksOf(n: LoomNode): string {
  const parts: string[] = [];
  if (n.bookmarked) parts.push(n.bookmarkLabel ? `★ "${n.bookmarkLabel}"` : "★");
  for (const t of n.tags ?? []) parts.push(`#${t}`);
  if (n.rating !== undefined && n.rating !== null) parts.push(n.rating > 0 ? `+${n.rating}` : String(n.rating));
  return parts.join(" ");
}

function withMarks(n: LoomNode): string {
  return [marksOf(n), summaryOf(n)].filter((x) => x.length > 0).join(" ");
}

function iconFor(n: LoomNode): string {
  return n.authorType === "model" ? "hubot" : "person";
}

export function treeItem(t: TreeSummary): ItemData {
  const nodes = t.nodes === 1 ? "1 node" : `${t.nodes} nodes`;
  return {
    id: `tree:${t.id}`,
    role: "tree",
    label: t.title,
    description: `${t.mode} · ${nodes}`,
    tooltip: `${t.title}\n${t.mode} mode, ${nodes}\n${t.id}`,
    tree: t.id,
    icon: "list-tree",
    collapsible: true,
    contextValue: "loomTree",
  };
}

function nodeTooltip(n: LoomNode, extra: string): string {
  // the node's own text first; the summary second, labelled with where it came from
  const summary = (n.summary ?? "").trim();
  const labelled = summary && summary !== (n.excerpt ?? "").trim() ? `${n.summarySource ?? "summary"}: ${cut(summary, 300)}` : "";
  const lines = [nodeLabel(n), summaryOf(n, 400), labelled, marksOf(n), `depth ${n.depth}`];
  if (n.siblingCount > 1) lines.push(`sibling ${n.siblingIndex}/${n.siblingCount}`);
  if (extra) lines.push(extra);
  return lines.filter((l) => l.length > 0).join("\n");
}

/** The current path under a tree: root first; the current node is marked. */
export function pathItems(info: NodeInfo): ItemData[] {
  const tree = treeIdOf(info.tree);
  return info.path.map((n) => {
    const current = n.id === info.node.id;
    // siblingIndex is 1-based (the server's k of "◀ k/n ▶")
    const branches = n.siblingCount > 1 ? ` ◀ ${n.siblingIndex}/${n.siblingCount} ▶` : "";
    return {
      id: `path:${tree}:${n.id}`,
      role: "path" as const,
      label: nodeLabel(n),
      description: withMarks(n) + branches,
      tooltip: nodeTooltip(n, current ? "your position" : ""),
      uri: n.uri,
      tree,
      node: n,
      icon: current ? "circle-filled" : iconFor(n),
      collapsible: true,
      contextValue: current ? "loomNode.current" : "loomNode",
    };
  });
}

/** Under a path node: its siblings (the alternatives to it), then its children. */
export function branchItems(info: NodeInfo, parentKey: string): ItemData[] {
  const self = info.node.id;
  const tree = treeIdOf(info.tree);
  const siblings = info.siblings.filter((s) => s.id !== self);
  const items: ItemData[] = [];
  for (const s of siblings) {
    items.push({
      id: `${parentKey}/sib:${s.id}`,
      role: "sibling",
      label: nodeLabel(s),
      description: withMarks(s),
      tooltip: nodeTooltip(s, "an alternative to " + nodeLabel(info.node)),
      uri: s.uri,
      tree,
      node: s,
      icon: "arrow-swap",
      collapsible: false,
      contextValue: "loomNode.sibling",
    });
  }
  for (const c of info.children) {
    items.push({
      id: `${parentKey}/child:${c.id}`,
      role: "child",
      label: nodeLabel(c),
      description: withMarks(c),
      tooltip: nodeTooltip(c, "continues " + nodeLabel(info.node)),
      uri: c.uri,
      tree,
      node: c,
      icon: "arrow-small-down",
      collapsible: false,
      contextValue: "loomNode.child",
    });
  }
  if (items.length === 0) {
    items.push({
      id: `${parentKey}/none`,
      role: "message",
      label: "no siblings or continuations",
      description: "",
      tooltip: "",
      icon: "circle-slash",
      collapsible: false,
      contextValue: "loomMessage",
    });
  }
  return items;
}

export function messageItem(key: string, text: string, tooltip = ""): ItemData {
  return { id: `msg:${key}`, role: "message", label: text, description: "", tooltip, icon: "warning", collapsible: false, contextValue: "loomMessage" };
}
