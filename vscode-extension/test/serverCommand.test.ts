import assert from "node:assert/strict";
import { test } from "node:test";
import { describeServer, INSTALL_HINT, resolveServerCommand, ServerNotFound, type Probe } from "../src/serverCommand";

function probe(executables: string[], extra: Partial<Probe> = {}): Probe {
  return {
    isExecutable: (f) => executables.includes(f),
    pathDirs: ["/usr/bin", "/opt/bin"],
    workspaceDirs: [],
    platform: "linux",
    trusted: true,
    ...extra,
  };
}

test("loom.server.path wins, with --db before serve", () => {
  const c = resolveServerCommand({ serverPath: "/venv/bin/loom", python: "/usr/bin/python3", database: "/tmp/x.db" }, probe(["/venv/bin/loom", "/usr/bin/python3"]));
  assert.deepEqual(c, { command: "/venv/bin/loom", args: ["--db", "/tmp/x.db", "serve"], versionArgs: ["--version"], source: "loom.server.path" });
  assert.equal(describeServer(c), "/venv/bin/loom");
});

test("loom.server.python runs the CLI module", () => {
  const c = resolveServerCommand({ serverPath: "", python: "python3", database: "" }, probe(["/opt/bin/python3"]));
  assert.deepEqual(c, { command: "/opt/bin/python3", args: ["-m", "loom.cli", "serve"], versionArgs: ["-m", "loom.cli", "--version"], source: "loom.server.python" });
  assert.equal(describeServer(c), "/opt/bin/python3 -m loom.cli");
});

test("falls back to loom on PATH, then a workspace venv", () => {
  assert.equal(resolveServerCommand({ serverPath: "", python: "", database: "" }, probe(["/opt/bin/loom"])).command, "/opt/bin/loom");
  const c = resolveServerCommand({ serverPath: "", python: "", database: "" }, probe(["/ws/.venv/bin/loom"], { workspaceDirs: ["/ws"] }));
  assert.equal(c.command, "/ws/.venv/bin/loom");
  assert.equal(c.source, "workspace venv");
});

test("expands ~ in paths", () => {
  const c = resolveServerCommand({ serverPath: "~/v/bin/loom", python: "", database: "~/l.db" }, probe(["/home/u/v/bin/loom"]), "/home/u");
  assert.deepEqual(c.args, ["--db", "/home/u/l.db", "serve"]);
  assert.equal(c.command, "/home/u/v/bin/loom");
});

test("a missing server says how to install it", () => {
  assert.throws(() => resolveServerCommand({ serverPath: "", python: "", database: "" }, probe([])), (err: unknown) => {
    assert.ok(err instanceof ServerNotFound);
    assert.match(err.message, /pipx install loom-lsp/);
    return true;
  });
  assert.throws(() => resolveServerCommand({ serverPath: "/nope/loom", python: "", database: "" }, probe([])), /loom.server.path is set to "\/nope\/loom"/);
  assert.throws(() => resolveServerCommand({ serverPath: "", python: "/nope/python", database: "" }, probe([])), /loom.server.python/);
  assert.match(INSTALL_HINT, /loom.server.path/);
});

test("Restricted Mode never runs the workspace's own loom", () => {
  const untrusted = { workspaceDirs: ["/ws"], trusted: false };
  assert.throws(() => resolveServerCommand({ serverPath: "", python: "", database: "" }, probe(["/ws/.venv/bin/loom"], untrusted)), (err: unknown) => {
    assert.ok(err instanceof ServerNotFound);
    assert.match(err.message, /\/ws\/.venv\/bin\/loom is not run in Restricted Mode: trust the workspace/);
    return true;
  });
  // a loom outside the workspace still serves
  const c = resolveServerCommand({ serverPath: "", python: "", database: "" }, probe(["/ws/.venv/bin/loom", "/opt/bin/loom"], untrusted));
  assert.equal(c.command, "/opt/bin/loom");
});

test("Restricted Mode skips relative PATH entries (the workspace's directory)", () => {
  const dirs = { pathDirs: ["bin", "", "/usr/bin"] };
  assert.equal(resolveServerCommand({ serverPath: "", python: "", database: "" }, probe(["bin/loom", "/usr/bin/loom"], { ...dirs, trusted: false })).command, "/usr/bin/loom");
  assert.equal(resolveServerCommand({ serverPath: "", python: "", database: "" }, probe(["bin/loom", "/usr/bin/loom"], { ...dirs, trusted: true })).command, "bin/loom");
});
