import assert from "node:assert/strict";
import { test } from "node:test";
import { asciiArrowAt } from "../src/arrow";

test("-> or => and a space at a line's start becomes the arrow", () => {
  assert.deepEqual(asciiArrowAt("-> "), { start: 0, end: 2 });
  assert.deepEqual(asciiArrowAt("  => "), { start: 2, end: 4 });
});

test("prose and half-typed arrows are left alone", () => {
  assert.equal(asciiArrowAt("she went -> "), undefined);
  assert.equal(asciiArrowAt("->"), undefined);
  assert.equal(asciiArrowAt("→ "), undefined);
  assert.equal(asciiArrowAt("--> "), undefined);
});
