import assert from "node:assert/strict";
import { test } from "node:test";
import {
  annotateArgs, branchArgs, commandLineAt, continueArgs, continueGiven, cycleArgs, dialogueAnchors,
  EXPORT_FORMATS, exportBytes, exportNotes, fillArgs, fillCount, isArrowLine,
  nodeAt, nodeIdInLabel, optionsCheck, runArgs, type Anchor,
} from "../src/args";

const anchors: Anchor[] = [
  { pos: { line: 0, character: 0 }, node: "root" },
  { pos: { line: 0, character: 45 }, node: "n1" },
  { pos: { line: 2, character: 10 }, node: "m1" },
];

test("the node under the cursor is the last one starting at or before it", () => {
  assert.equal(nodeAt(anchors, { line: 0, character: 3 }), "root");
  assert.equal(nodeAt(anchors, { line: 0, character: 45 }), "n1");
  assert.equal(nodeAt(anchors, { line: 1, character: 0 }), "n1");
  assert.equal(nodeAt(anchors, { line: 2, character: 9 }), "n1");
  assert.equal(nodeAt(anchors, { line: 9, character: 0 }), "m1");
  assert.equal(nodeAt([...anchors].reverse(), { line: 9, character: 0 }), "m1");
  assert.equal(nodeAt([{ pos: { line: 3, character: 0 }, node: "x" }], { line: 0, character: 0 }), undefined);
});

test("node ids in inlay hints and their tooltips", () => {
  assert.equal(nodeIdInLabel("︱›dkbqjhx"), "dkbqjhx");
  assert.equal(nodeIdInLabel("︱w9140s"), "w9140s");
  assert.equal(nodeIdInLabel("[gcq22b] model (edited)"), "gcq22b");
  assert.equal(nodeIdInLabel("︱a7x2'"), "a7x2'");
  assert.equal(nodeIdInLabel("︱"), undefined);
});

test("dialogue blocks are headed [id] author · time", () => {
  const text = "[4h1pw4] human · 3m ago\nHello.\n\n[dkbqjh] model · just now\nHi there.";
  assert.deepEqual(dialogueAnchors(text), [
    { pos: { line: 0, character: 0 }, node: "4h1pw4" },
    { pos: { line: 3, character: 0 }, node: "dkbqjh" },
  ]);
  assert.deepEqual(dialogueAnchors("[not a header]\nprose"), []);
});

test("arrow-command lines and the one to run", () => {
  assert.ok(isArrowLine("→ view a7x2"));
  assert.ok(isArrowLine("  -> view a7x2"));
  assert.ok(!isArrowLine("prose → view"));
  const lines = ["prose", "→ annotate a7x2 \"x", "continued\"", "", "more prose"];
  assert.equal(commandLineAt(lines, 1), 1);
  assert.equal(commandLineAt(lines, 2), 1);
  assert.equal(commandLineAt(lines, 4), undefined);
  assert.equal(commandLineAt(lines, 0), undefined);
});

test("the server commands' arguments", () => {
  assert.deepEqual(continueArgs("loom://path/T/a"), { uri: "loom://path/T/a" });
  assert.deepEqual(continueArgs("u", { n: 3, tokens: 40 }), { uri: "u", n: 3, tokens: 40 });
  assert.deepEqual(cycleArgs("u", "a7x2", -1), { uri: "u", node: "a7x2", delta: -1 });
  assert.deepEqual(branchArgs("u", "a7x2"), { uri: "u", node: "a7x2" });
  assert.deepEqual(annotateArgs("u", "a7x2", "note"), { uri: "u", node: "a7x2", text: "note" });
  assert.deepEqual(runArgs("u", 4), { uri: "u", line: 4 });
});

test("continue's options go to the server as typed, whatever they name", () => {
  // (the input box read only n: and tokens:, so temperature, top_p, seed or models could
  // not be asked; the server now reads the text with the grammar of a typed → continue)
  const typed = "temperature:0.7 n:2 models:a,b top_k:40 dry_multiplier:0.8 preset:\"creative\"";
  assert.deepEqual(continueArgs("u", { options: `  ${typed} ` }), { uri: "u", options: typed });
  assert.deepEqual(continueArgs("u", { options: "  " }), { uri: "u" });
  assert.deepEqual(continueGiven(typed), { options: typed });
  assert.deepEqual(continueGiven({ n: 2, tokens: 40, options: "seed:7", other: 1 }), { n: 2, tokens: 40, options: "seed:7" });
  assert.deepEqual(continueGiven({ n: "2" }), {});
  assert.deepEqual(continueGiven(undefined), {});
});

test("what the server says of the options typed so far, as the prompt shows it", () => {
  assert.deepEqual(optionsCheck({ ok: false, message: '✗ INVALID_SYNTAX: unknown option "bogus:" for continue\n  hint: → help continue' }),
    { message: '✗ INVALID_SYNTAX: unknown option "bogus:" for continue · hint: → help continue', severity: "error" });
  assert.deepEqual(optionsCheck({ ok: true, message: "✓ read as → continue temperature:0.7", data: { corrected: true } }),
    { message: "✓ read as → continue temperature:0.7", severity: "info" });
  assert.equal(optionsCheck({ ok: true, message: "✓ → continue n:2", data: { corrected: false } }), undefined);
  assert.equal(optionsCheck(undefined), undefined);
});

test("exports: every format the server writes, text or a weave's bytes, and what it cannot hold", () => {
  assert.deepEqual(EXPORT_FORMATS.map((f) => f.label),
    ["openloom", "md", "loom", "socketteer", "loomsidian", "miniloom", "tapestry"]);
  assert.equal(EXPORT_FORMATS.find((f) => f.label === "tapestry")?.ext, "tapestry");
  assert.deepEqual([...exportBytes({ text: "é{" }) ?? []], [0xc3, 0xa9, 0x7b]);
  const weave = Buffer.from("VersionedTapestryWeave__\u0000\u00ff", "latin1");
  assert.deepEqual(Buffer.from(exportBytes({ base64: weave.toString("base64") }) ?? []), weave);
  assert.equal(exportBytes({}), undefined);
  assert.equal(exportNotes("✓ exported \"T\" (miniloom)\n  not in the file (MiniLoom cannot hold it):\n"
    + "    2 link(s) between nodes"), "not in the file (MiniLoom cannot hold it):; 2 link(s) between nodes");
  assert.equal(exportNotes("✓ exported"), "");
});

test("loom.fill's arguments: the selection's two ends and n; the count typed, checked", () => {
  assert.deepEqual(fillArgs("loom://path/T/a", { line: 2, character: 4 }, { line: 2, character: 9 }, 3),
    { uri: "loom://path/T/a", line: 2, character: 4, endLine: 2, endCharacter: 9, n: 3 });
  assert.equal(fillCount(" 3 "), 3);
  assert.equal(fillCount("0"), "a whole number from 1 to 10");
  assert.equal(fillCount("2.5"), "a whole number from 1 to 10");
  assert.equal(fillCount("11"), "a whole number from 1 to 10");
});
