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
