import assert from "node:assert/strict";
import { test } from "node:test";
import { errorOf, treeIdOf, type LoomNode, type NodeInfo } from "../src/protocol";
import { branchItems, moreItems, nodeLabel, pathItems, summaryOf, treeItem } from "../src/treeModel";

const T = "01M80YE1MW4H1PW48GY8VFFT97";
let n = 0;
function node(localId: string, author: string, summary: string, extra: Partial<LoomNode> = {}): LoomNode {
  n += 1;
  return {
    id: `ID${n}`, localId, label: localId, author, authorType: author === "model" ? "model" : "human",
    summary, depth: 0, created: 0, uri: `loom://path/${T}/${localId}`, siblingIndex: 1, siblingCount: 1, ...extra,
  };
}

const root = node("4h1pw4", "human", "The house stood empty at the end of the lane.");
// siblingIndex is 1-based, as the server sends it (loom/nodeInfo)
const n1 = node("dkbqjh", "human", "She hadn't visited since her mother's death,", { depth: 1 });
const m1 = node("dkbqjhx", "model", "and the windows seemed to watch her", { depth: 2, siblingIndex: 1, siblingCount: 3 });
const m2 = node("9099jy", "model", "and the walnut trees had dropped their leaves", { depth: 2, siblingIndex: 2, siblingCount: 3 });
const m3 = node("n8j51n", "model", "though the key still hung on the nail", { depth: 2, siblingIndex: 3, siblingCount: 3 });
const h2 = node("w9140s", "human", "She stopped at the gate.", { depth: 3 });

test("a node is labelled [localId] author, described by its summary", () => {
  assert.equal(nodeLabel(m1), "[dkbqjhx] model");
  assert.equal(nodeLabel({ ...m1, label: "dkbqjhx'" }), "[dkbqjhx'] model");
  assert.equal(nodeLabel({ ...m1, label: "" }), "[dkbqjhx] model");
  assert.equal(summaryOf(node("x", "h", "a\n  b   c")), "a b c");
  assert.equal(summaryOf(node("x", "h", "x".repeat(100)), 10), "xxxxxxxxx…");
});

test("a tree item: title, mode and node count; expandable", () => {
  const t = treeItem({ id: T, title: "The House", mode: "buffer", nodes: 14, uri: `loom://tree/${T}` });
  assert.equal(t.label, "The House");
  assert.equal(t.description, "buffer · 14 nodes");
  assert.equal(t.collapsible, true);
  assert.equal(t.contextValue, "loomTree");
});

test("the current path, root first, the current node marked, branch points shown", () => {
  const info: NodeInfo = { tree: T, node: h2, path: [root, n1, m1, h2], siblings: [h2], children: [] };
  const items = pathItems(info);
  assert.deepEqual(items.map((i) => i.label), ["[4h1pw4] human", "[dkbqjh] human", "[dkbqjhx] model", "[w9140s] human"]);
  assert.equal(items[2].description, "and the windows seemed to watch her ◀ 1/3 ▶");
  assert.equal(items[3].icon, "circle-filled");
  assert.equal(items[2].icon, "hubot");
  assert.equal(items[3].uri, h2.uri);
  assert.ok(items.every((i) => i.collapsible));
  assert.equal(new Set(items.map((i) => i.id)).size, 4);
});

test("under a path node: its siblings, then its children", () => {
  const info: NodeInfo = { tree: T, node: m1, path: [root, n1, m1], siblings: [m1, m2, m3], children: [h2] };
  const items = branchItems(info, "path:x");
  assert.deepEqual(items.map((i) => [i.role, i.label]), [
    ["sibling", "[9099jy] model"],
    ["sibling", "[n8j51n] model"],
    ["child", "[w9140s] human"],
  ]);
  assert.equal(items[0].description, "and the walnut trees had dropped their leaves");
  assert.equal(items[0].uri, m2.uri);
  assert.match(items[0].tooltip, /sibling 2\/3/);
});

test("a leaf without siblings says so", () => {
  const info: NodeInfo = { tree: T, node: h2, path: [h2], siblings: [h2], children: [] };
  const items = branchItems(info, "p");
  assert.equal(items.length, 1);
  assert.equal(items[0].role, "message");
});

test("nodeInfo's tree may be the id or the tree object", () => {
  const info: NodeInfo = { tree: { id: T, title: "The House", mode: "buffer" }, node: m1, path: [root, n1, m1], siblings: [m1, m2], children: [] };
  assert.ok(pathItems(info).every((i) => i.tree === T && i.id.startsWith(`path:${T}:`)));
  assert.ok(branchItems(info, "p").every((i) => i.tree === T));
  assert.equal(treeIdOf("abc"), "abc");
});

test("a custom request's {error} answer", () => {
  assert.equal(errorOf({ error: "✗ NOT_FOUND: no tree" }), "✗ NOT_FOUND: no tree");
  assert.equal(errorOf({ uri: "u", text: "" }), undefined);
  assert.equal(errorOf(null), undefined);
  assert.equal(errorOf([]), undefined);
});

test("a row shows the node's own text first, with its marks; the summary is labelled", () => {
  const wrong = node("5rvhsv", "model", "She had been watching her mother's car", {
    excerpt: "and the windows seemed to watch her approach with something like reproach.",
    summarySource: "summary (written by a model)", bookmarked: true, bookmarkLabel: "tone shift", tags: ["dream"], rating: 1,
  });
  const info: NodeInfo = { tree: T, node: wrong, path: [wrong], siblings: [wrong], children: [] };
  const item = pathItems(info)[0];
  assert.equal(item.description, '★ "tone shift" #dream +1 and the windows seemed to watch her approach with something like reproach.');
  assert.match(item.tooltip, /^\[5rvhsv\] model\nand the windows seemed/);
  assert.match(item.tooltip, /summary \(written by a model\): She had been watching/);
});

test("a long family comes a page at a time: a '… N more' item expands to the next page", () => {
  const many = (from: number, count: number): LoomNode[] =>
    Array.from({ length: count }, (_, i) => node(`s${from + i}`, "model", `sibling ${from + i}`, { siblingIndex: from + i + 1, siblingCount: 250 }));
  const info: NodeInfo = {
    tree: T, node: m1, path: [root, n1, m1], siblings: many(0, 100), children: [h2],
    siblingsTotal: 250, siblingsOffset: 0, siblingsNext: 100, childrenTotal: 1, childrenOffset: 0, childrenNext: null,
  };
  const items = branchItems(info, "p");
  assert.equal(items.filter((i) => i.role === "sibling").length, 100);
  const more = items.find((i) => i.role === "more");
  assert.ok(more && more.collapsible);
  assert.equal(more.label, "… 150 more siblings");
  assert.deepEqual(more.more, { kind: "siblings", offset: 100 });
  assert.equal(items[items.length - 1].role, "child"); // no "more" for the children: one page
  const next = moreItems({ ...info, siblings: many(100, 100), siblingsOffset: 100, siblingsNext: 200 }, "siblings", more.id);
  assert.equal(next.length, 101);
  assert.equal(next[100].label, "… 50 more siblings");
  const last = moreItems({ ...info, siblings: many(200, 50), siblingsOffset: 200, siblingsNext: null }, "siblings", "q");
  assert.equal(last.length, 50);
  assert.ok(last.every((i) => i.role === "sibling"));
  // an answer without paging fields (a small family, or an older server) has no "more" item
  const small: NodeInfo = { tree: T, node: m1, path: [], siblings: [m1, m2, m3], children: [] };
  assert.ok(!branchItems(small, "p").some((i) => i.role === "more"));
});
