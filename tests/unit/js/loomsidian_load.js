// loomsidian's load steps, re-implemented as its source states them (cosmicoptima/loom at
// afbb3519f10d668d4688c68370d7b9305c9f80dc, main.ts): loadState takes data.state (no
// check), onFileOpen indexes state[path] and walks ancestors(state.current) through
// nodes[id].parentId, fullText joins texts from the root, views.ts lists roots and
// children as Object.entries(nodes) filtered by parentId (so in JS key order) and reads
// state.hoisted as an array. Written from reading the source, not copied from it.
//
// usage: node loomsidian_load.js DATA.json PATH  →  {"texts": {id: full text},
//   "roots": [ids], "children": {id: [ids]}, "current": id, "bookmarked": [ids]}
"use strict";
const fs = require("fs");

const data = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const state = (data && data.state) || {};
const note = state[process.argv[3]];
if (!note) throw new Error("no state for that note: the plugin would start a new one");
const nodes = note.nodes;
if (typeof note.current !== "string" || !nodes[note.current])
  throw new Error("current names no node: onFileOpen would throw");
if (!Array.isArray(note.hoisted)) throw new Error("hoisted is not an array");

function ancestors(id) {
  const out = [];
  let node = id;
  while (node) {
    if (!nodes[node]) throw new Error(`parentId ${node} names no node`);
    node = nodes[node].parentId;
    if (node) out.push(node);
  }
  return out.reverse();
}
function fullText(id) {
  let text = "";
  let current = id;
  while (current) {
    text = nodes[current].text + text;
    current = nodes[current].parentId;
  }
  return text;
}

ancestors(note.current);
const texts = {};
const children = {};
for (const [id, node] of Object.entries(nodes)) {
  if (typeof node.text !== "string") throw new Error(`node ${id} has no text`);
  if (node.parentId !== null && !nodes[node.parentId])
    throw new Error(`node ${id}: parentId names no node`);
  ancestors(id);
  texts[id] = fullText(id);
  children[id] = Object.entries(nodes)
    .filter(([, n]) => n.parentId === id)
    .map(([cid]) => cid);
}
const roots = Object.entries(nodes)
  .filter(([, n]) => n.parentId === null)
  .map(([id]) => id);
const bookmarked = Object.entries(nodes)
  .filter(([, n]) => n.bookmarked)
  .map(([id]) => id);
process.stdout.write(
  JSON.stringify({ texts, roots, children, current: note.current, bookmarked })
);
