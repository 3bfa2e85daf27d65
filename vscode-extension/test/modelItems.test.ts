import assert from "node:assert/strict";
import { test } from "node:test";
import { pickerRows, pickerText } from "../src/modelItems";
import type { ModelsResult } from "../src/protocol";

const data: ModelsResult = {
  models: [
    { name: "fake", description: "openai-compatible fake-base", ready: true, default: true },
    { name: "claude-haiku", description: "anthropic claude-haiku-4-5", ready: false, default: false },
  ],
  current: "fake", picked: null,
  presets: [{ name: "wild", description: "temperature 1.3 · top_k 100" }, { name: "calm", description: "low and steady" }],
  preset: "wild",
};

test("the models, then the presets under a separator, the picked ones checked", () => {
  const rows = pickerRows(data);
  assert.deepEqual(rows.map((r) => r.label), ["$(check) fake", "claude-haiku", "sampler presets (config.toml)",
    "$(check) preset: wild", "preset: calm", "no preset"]);
  assert.equal(rows[0].profile, undefined); // the default: picked as "the default again"
  assert.equal(rows[1].profile, "claude-haiku");
  assert.equal(rows[1].detail, "no API key set");
  assert.equal(rows[2].kind, "separator");
  assert.equal(rows[4].preset, "calm");
  assert.equal(rows[4].description, "low and steady");
  assert.equal(rows[5].preset, ""); // none again
});

test("without presets: the models alone; without a picked preset, no 'no preset' row", () => {
  assert.equal(pickerRows({ ...data, presets: [] }).length, 2);
  assert.equal(pickerRows({ ...data, preset: null }).at(-1)?.label, "preset: calm");
});

test("the status bar names the preset beside the model", () => {
  assert.equal(pickerText(data), "fake · wild");
  assert.equal(pickerText({ ...data, preset: null }), "fake");
});
