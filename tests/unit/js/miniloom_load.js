// MiniLoom's load steps, re-implemented as its source states them (JD-P/miniloom at
// b559337da9c3d9f8a9bedd7c8795acc94bc6508c): src/file-manager.js loadFileData (the root is
// nodeStore["1"], focus is data.focus.id or the root) and src/model.js
// LoomTree.loadFromData / applyPatches (a node's text: the patches from the root down,
// the root's own text always "", a "" patch skipped), with the npm diff-match-patch the
// app depends on. Written from reading the source, not copied from it.
//
// usage: node miniloom_load.js SAVE.json  →  {"texts": {id: text}, "focus": id,
//   "children": {id: [ids]}, "failed": [ids whose patch_apply reported a failed hunk]}
"use strict";
const fs = require("fs");
const DiffMatchPatch = require("diff-match-patch");

const data = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const dmp = new DiffMatchPatch();
const store = data.loomTree.nodeStore; // loadFromData indexes it directly
const root = store["1"];
if (!root) throw new Error('no nodeStore["1"]: MiniLoom would have no root');
for (const key of Object.keys(store)) {
  const n = store[key];
  if (n.id !== key) throw new Error(`node ${key} has id ${n.id}`);
  for (const c of n.children || []) {
    if (!store[c]) throw new Error(`node ${key} lists a missing child ${c}`);
    if (store[c].parent !== key) throw new Error(`child ${c} of ${key} names another parent`);
  }
  if (n.parent !== null && !store[n.parent])
    throw new Error(`node ${key} names a missing parent ${n.parent}`);
}

const failed = [];
function applyPatches(node) {
  if (!node || node === root) return "";
  const patches = [node.patch];
  let current = node;
  while (current.parent !== null) {
    current = store[current.parent];
    if (!current) break;
    patches.push(current.patch);
  }
  patches.reverse();
  let out = "";
  for (const patch of patches) {
    if (patch === "") continue;
    const [text, results] = dmp.patch_apply(patch, out);
    if (results.some(r => !r)) failed.push(node.id);
    out = text;
  }
  return out;
}

const texts = {};
const children = {};
for (const key of Object.keys(store)) {
  texts[key] = applyPatches(store[key]);
  children[key] = store[key].children || [];
}
const focus = data.focus && data.focus.id ? store[data.focus.id] : root;
if (!focus) throw new Error("the focus names no node");
process.stdout.write(
  JSON.stringify({ texts, focus: focus.id, children, failed: [...new Set(failed)] })
);
