/** What the Loom view shows, built from the server's answers: pure, no VS Code imports. */

import { treeIdOf, type LoomNode, type NodeInfo, type TreeSummary } from "./protocol";

export type Role = "tree" | "path" | "sibling" | "child" | "more" | "message";

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
  /** A "… N more" item: expanding it asks for the next page of these, from `offset`. */
  more?: { kind: "siblings" | "children"; offset: number };
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

/** A sibling (an alternative to the node) or a child (a continuation of it) under a path node. */
const RELATED = {
  sibling: { key: "sib", icon: "arrow-swap", how: "an alternative to ", context: "loomNode.sibling" },
  child: { key: "child", icon: "arrow-small-down", how: "continues ", context: "loomNode.child" },
} as const;

function relatedItem(info: NodeInfo, n: LoomNode, parentKey: string, role: "sibling" | "child"): ItemData {
  const r = RELATED[role];
  return {
    id: `${parentKey}/${r.key}:${n.id}`,
    role,
    label: nodeLabel(n),
    description: withMarks(n),
    tooltip: nodeTooltip(n, r.how + nodeLabel(info.node)),
    uri: n.uri,
    tree: treeIdOf(info.tree),
    node: n,
    icon: r.icon,
    collapsible: false,
    contextValue: r.context,
  };
}

const siblingItem = (info: NodeInfo, s: LoomNode, parentKey: string): ItemData => relatedItem(info, s, parentKey, "sibling");
const childItem = (info: NodeInfo, c: LoomNode, parentKey: string): ItemData => relatedItem(info, c, parentKey, "child");

/**
 * "… 9,900 more siblings": the server answers a page of them (100); expanding this item
 * asks for the next page (`siblingsOffset`/`childrenOffset`). None after the last page.
 */
function moreItem(info: NodeInfo, kind: "siblings" | "children", parentKey: string): ItemData | undefined {
  const next = kind === "siblings" ? info.siblingsNext : info.childrenNext;
  const total = (kind === "siblings" ? info.siblingsTotal : info.childrenTotal) ?? 0;
  if (next === undefined || next === null || next >= total) return undefined;
  const left = total - next;
  const what = kind === "siblings" ? (left === 1 ? "sibling" : "siblings") : left === 1 ? "continuation" : "continuations";
  return {
    id: `${parentKey}/more-${kind}:${next}`,
    role: "more",
    label: `… ${left.toLocaleString("en-US")} more ${what}`,
    description: `${next + 1}–${total.toLocaleString("en-US")} of ${total.toLocaleString("en-US")}`,
    tooltip: `Expand to list the next ${kind} of ${nodeLabel(info.node)}`,
    tree: treeIdOf(info.tree),
    node: info.node,
    icon: "ellipsis",
    collapsible: true,
    contextValue: "loomMore",
    more: { kind, offset: next },
  };
}

/** Under a path node: its siblings (the alternatives to it), then its children; a page of each, and "… N more" items for the rest. */
export function branchItems(info: NodeInfo, parentKey: string): ItemData[] {
  const self = info.node.id;
  const items: ItemData[] = info.siblings.filter((s) => s.id !== self).map((s) => siblingItem(info, s, parentKey));
  const moreSiblings = moreItem(info, "siblings", parentKey);
  if (moreSiblings) items.push(moreSiblings);
  for (const c of info.children) items.push(childItem(info, c, parentKey));
  const moreChildren = moreItem(info, "children", parentKey);
  if (moreChildren) items.push(moreChildren);
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

/** Under a "… N more" item: the next page of those siblings or children, and a further "… more" item. */
export function moreItems(info: NodeInfo, kind: "siblings" | "children", parentKey: string): ItemData[] {
  const items =
    kind === "siblings"
      ? info.siblings.filter((s) => s.id !== info.node.id).map((s) => siblingItem(info, s, parentKey))
      : info.children.map((c) => childItem(info, c, parentKey));
  const further = moreItem(info, kind, parentKey);
  if (further) items.push(further);
  return items;
}

export function messageItem(key: string, text: string, tooltip = ""): ItemData {
  return { id: `msg:${key}`, role: "message", label: text, description: "", tooltip, icon: "warning", collapsible: false, contextValue: "loomMessage" };
}
