import assert from "node:assert/strict";
import { test } from "node:test";
import { siblingItems, siblingPreview, type Sibling } from "../src/siblingModel";

function sib(index: number, extra: Partial<Sibling> = {}): Sibling {
  return {
    id: `ID${index}`, localId: `aaa${index}`, label: `aaa${index}`, author: "model", authorType: "model",
    index, count: 3, current: index === 1, text: ` text ${index}\nsecond line`, excerpt: "", marks: "",
    model: "fake-base", request: 3, children: 0, uri: `loom://path/T/aaa${index}/X`, ...extra,
  };
}

test("each sibling with its place, author, request and own text", () => {
  const items = siblingItems([sib(1), sib(2, { marks: "★ bookmarked", children: 2 }), sib(3, { text: "" })]);
  assert.equal(items[0].label, "$(circle-filled) 1/3 [aaa1] model");
  assert.equal(items[1].label, "2/3 [aaa2] model");
  assert.equal(items[1].description, "fake-base · one of 3 from one request · ★ bookmarked · 2 continuations");
  assert.equal(items[0].detail, "text 1 second line");
  assert.equal(items[2].detail, "(no text)");
});

test("the preview: place, author and whether it is shown, its bits, then the whole text", () => {
  const one = sib(1);
  assert.equal(siblingPreview(one, one), "● 1/3 [aaa1] model · shown now\nfake-base · one of 3 from one request\n\ntext 1\nsecond line\n");
  assert.equal(siblingPreview(sib(2, { model: null, request: null, author: "human", text: "" }), one),
    "2/3 [aaa2] human · Enter shows it in place of [aaa1]\n\n(no text)\n");
});
