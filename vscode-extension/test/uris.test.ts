import assert from "node:assert/strict";
import { test } from "node:test";
import { describeUri, docUri, languageIdFor, parseLoomUri, pathUri, traceUri, treeOf, treeUri } from "../src/uris";

const TREE = "01M80YE1MW4H1PW48GY8VFFT97";

test("parses the four kinds of loom: URI", () => {
  assert.deepEqual(parseLoomUri(`loom://path/${TREE}/gcq22b`), { kind: "path", tree: TREE, node: "gcq22b" });
  assert.deepEqual(parseLoomUri(`loom://tree/${TREE}`), { kind: "tree", tree: TREE });
  // the server ends tree and path URIs with the tree's title (the tab's name)
  assert.deepEqual(parseLoomUri(`loom://path/${TREE}/gcq22b/The%20House`), { kind: "path", tree: TREE, node: "gcq22b" });
  assert.deepEqual(parseLoomUri(`loom://tree/${TREE}/The%20House%20(tree)`), { kind: "tree", tree: TREE });
  assert.deepEqual(parseLoomUri("loom://doc/character%20notes"), { kind: "doc", name: "character notes" });
  assert.deepEqual(parseLoomUri("loom://trace/collaborator"), { kind: "trace", participant: "collaborator" });
});

test("rejects what is not a loom: URI", () => {
  assert.equal(parseLoomUri("file:///tmp/x"), undefined);
  assert.equal(parseLoomUri("loom://path/only-tree"), undefined);
  assert.equal(parseLoomUri("loom://nothing/x"), undefined);
  assert.equal(parseLoomUri("loom://doc/"), undefined);
});

test("builds URIs that parse back", () => {
  assert.deepEqual(parseLoomUri(pathUri(TREE, "a7x2")), { kind: "path", tree: TREE, node: "a7x2" });
  assert.deepEqual(parseLoomUri(treeUri(TREE)), { kind: "tree", tree: TREE });
  assert.equal(docUri("character notes/ch 1"), "loom://doc/character%20notes%2Fch%201");
  assert.deepEqual(parseLoomUri(docUri("character notes/ch 1")), { kind: "doc", name: "character notes/ch 1" });
  assert.deepEqual(parseLoomUri(traceUri("human")), { kind: "trace", participant: "human" });
});

test("documents are Markdown, everything else is loom", () => {
  assert.equal(languageIdFor(pathUri(TREE, "a7x2")), "loom");
  assert.equal(languageIdFor(treeUri(TREE)), "loom");
  assert.equal(languageIdFor(traceUri("human")), "loom");
  assert.equal(languageIdFor(docUri("notes")), "markdown");
  assert.equal(languageIdFor("untitled:x"), undefined);
});

test("tree of a URI and a short description", () => {
  assert.equal(treeOf(pathUri(TREE, "a7x2")), TREE);
  assert.equal(treeOf(treeUri(TREE)), TREE);
  assert.equal(treeOf(docUri("notes")), undefined);
  assert.equal(describeUri(pathUri(TREE, "a7x2")), "path to a7x2");
  assert.equal(describeUri(docUri("character notes")), "character notes");
});
