import assert from "node:assert/strict";
import { test } from "node:test";
import { statusView } from "../src/status";

test("the current node, with its depth", () => {
  const v = statusView({ uri: "u", label: "gcq22b", node: "gcq22b", depth: 4, generating: false });
  assert.equal(v?.text, "$(git-commit) gcq22b · depth 4");
  assert.equal(v?.cancellable, false);
});

test("a generation in progress is cancellable", () => {
  const v = statusView({ uri: "u", label: "gcq22b", node: "gcq22b", depth: 4, generating: true, message: "3 continuations" });
  assert.equal(v?.cancellable, true);
  assert.match(v?.text ?? "", /generating/);
  assert.match(v?.tooltip ?? "", /Click to cancel/);
});

test("nothing to show without a node", () => {
  assert.equal(statusView(undefined), undefined);
  assert.equal(statusView({ uri: "u", label: "", node: null, depth: null, generating: false }), undefined);
});

test("a busy collaborator shows where it works", () => {
  const v = statusView({ uri: "u", label: "gcq22b", node: "gcq22b", depth: 4, generating: false,
    collaborator: { name: "collaborator", busy: true, node: "b3k9", depth: 8 } });
  assert.match(v?.text ?? "", /collaborator at \[b3k9\]/);
  assert.match(v?.tooltip ?? "", /Collaborator active at \[b3k9\], depth:8/);
  const idle = statusView({ uri: "u", label: "gcq22b", node: "gcq22b", depth: 4, generating: false,
    collaborator: { name: "collaborator", busy: false, node: "b3k9", depth: 8 } });
  assert.doesNotMatch(idle?.text ?? "", /collaborator/);
});
