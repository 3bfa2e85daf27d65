import assert from "node:assert/strict";
import { test } from "node:test";
import type { SaveResult } from "../src/protocol";
import { choiceOf, questionToAsk } from "../src/saveQuestion";

const question = {
  question: "Saving would empty 5 nodes of this path (all of its text). Replace their text?",
  choices: [
    { choice: "branch" as const, title: "Save as a New Branch" },
    { choice: "replace" as const, title: "Replace Their Text" },
  ],
};

const asked: SaveResult = {
  ok: false,
  message: "✗ CONFLICT: saving would empty 5 nodes of this path (all of its text); nothing was committed",
  uri: "loom://path/T/n",
  data: { confirm: question },
};

test("a save that asks first is put to the writer when they saved", () => {
  assert.equal(questionToAsk(asked, "manual")?.question.startsWith("Saving would empty"), true);
  assert.equal(questionToAsk(asked, undefined)?.choices.length, 2);
});

test("an autosave never answers for the writer: the document stays unsaved", () => {
  assert.equal(questionToAsk(asked, "afterDelay"), undefined);
  assert.equal(questionToAsk(asked, "focusOut"), undefined);
});

test("a save that did not ask, or that worked, asks nothing", () => {
  assert.equal(questionToAsk({ ok: true, message: "✓ committed 1 node", uri: "u" }, "manual"), undefined);
  assert.equal(questionToAsk({ ok: false, message: "✗ CONFLICT: busy", uri: "u" }, "manual"), undefined);
});

test("a button stands for its choice; Cancel or a closed dialog for none", () => {
  const q = question;
  assert.equal(choiceOf(q, "Save as a New Branch"), "branch");
  assert.equal(choiceOf(q, "Replace Their Text"), "replace");
  assert.equal(choiceOf(q, undefined), undefined);
  assert.equal(choiceOf(q, "Cancel"), undefined);
});
