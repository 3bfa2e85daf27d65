import assert from "node:assert/strict";
import { test } from "node:test";
import { languageStatusView, type ServerState } from "../src/serverStatus";

const base: ServerState = { phase: "running", version: "0.1.0", extensionVersion: "0.1.0", participant: "human", restricted: false };

test("running: the server's version and who this editor acts as", () => {
  assert.deepEqual(languageStatusView(base), { text: "Loom 0.1.0", detail: "as human", severity: "information", busy: false });
  assert.equal(languageStatusView({ ...base, participant: "alice", restricted: true }).detail, "as alice · Restricted Mode");
});

test("starting is busy", () => {
  const v = languageStatusView({ ...base, phase: "starting", version: undefined });
  assert.equal(v.busy, true);
  assert.equal(v.text, "Loom starting");
});

test("a version mismatch is a warning naming both versions", () => {
  const v = languageStatusView({ ...base, version: "0.2.0", versionWarning: "…" });
  assert.equal(v.severity, "warning");
  assert.equal(v.text, "$(warning) Loom 0.2.0");
  assert.equal(v.detail, "server 0.2.0, extension 0.1.0 · as human");
  const old = languageStatusView({ ...base, version: undefined, versionWarning: "…" });
  assert.match(old.detail, /a server without --version, extension 0\.1\.0/);
});

test("failed: an error with the first sentence of why", () => {
  const v = languageStatusView({ ...base, phase: "failed", version: undefined,
    error: "The Loom language server (`loom`) was not found. Install it with `pipx install loom-lsp`." });
  assert.equal(v.severity, "error");
  assert.equal(v.detail, "The Loom language server (`loom`) was not found");
  assert.equal(languageStatusView({ ...base, phase: "stopped" }).severity, "warning");
});
