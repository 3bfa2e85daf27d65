import assert from "node:assert/strict";
import { test } from "node:test";
import { offeredItems, ShownSuggestion } from "../src/shownSuggestion";

const A = { node: "A", text: " The cat sat." };
const B = { node: "B", text: " The dog barked." };
const C = { node: "C", text: " Then silence." };

test("the first item is shown until Alt+] or Alt+[ moves, around the ends", () => {
  const s = new ShownSuggestion();
  assert.equal(s.shown(), undefined);
  s.provided([A, B, C], 1);
  assert.equal(s.shown()?.node, "A");
  s.cycle(1);
  assert.equal(s.shown()?.node, "B");
  s.cycle(1);
  s.cycle(1);
  assert.equal(s.shown()?.node, "A");
  s.cycle(-1);
  assert.equal(s.shown()?.node, "C");
});

test("the one shown stays shown while it is offered: the refetch a cycle makes, an edit (first in the list then)", () => {
  const s = new ShownSuggestion();
  s.provided([A, B, C], 1);
  s.cycle(1);
  s.provided([A, B, C], 1);
  assert.equal(s.shown()?.node, "B");
  s.provided([A, B], 2); // typed " T": VS Code keeps B, first in its list
  assert.equal(s.shown()?.node, "B");
  s.cycle(1);
  assert.equal(s.shown()?.node, "A");
});

test("the first again when the one shown is no longer offered, or after Escape", () => {
  const s = new ShownSuggestion();
  s.provided([A, B, C], 1);
  s.cycle(1);
  s.provided([{ node: "B2", text: " dog barked." }], 2); // a word of B accepted: its rest
  assert.equal(s.shown()?.node, "B2");
  s.provided([A, B, C], 3);
  s.cycle(1);
  s.reset();
  assert.equal(s.shown()?.node, "A");
  s.provided([], 4);
  assert.equal(s.shown(), undefined);
});

test("items as the language client gives them: the node from the command's argument", () => {
  assert.deepEqual(offeredItems([
    { insertText: " The cat", command: { arguments: [{ uri: "loom://path/T/n", node: "A", inserted: true }] } },
    { insertText: { value: " snippet" }, command: { arguments: [{ node: "B" }] } },
    { insertText: " no command" },
    { insertText: " The cat", command: { arguments: [{ node: "A2" }] } },
  ]), [{ node: "A", text: " The cat" }, { node: "B", text: " snippet" }]);
});
