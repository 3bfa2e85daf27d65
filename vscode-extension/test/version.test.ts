import assert from "node:assert/strict";
import { test } from "node:test";
import { checkVersion, installHint, parseServerVersion } from "../src/version";

test("reads the version from `loom --version`", () => {
  assert.equal(parseServerVersion("loom 0.1.0 (Python 3.11.7, /work/main/server/loom)\n"), "0.1.0");
  assert.equal(parseServerVersion("loom 1.2.3rc1\n"), "1.2.3rc1");
  assert.equal(parseServerVersion("loom 0.1.0.dev4+g1234"), "0.1.0.dev4+g1234");
  assert.equal(parseServerVersion("usage: loom [-h] ...\nloom: error: the following arguments are required: cmd"), undefined);
  assert.equal(parseServerVersion(""), undefined);
});

test("the same major.minor is fine, whatever the patch", () => {
  assert.deepEqual(checkVersion("0.1.0", "loom 0.1.0 (Python 3.11.7, /x)", "/v/bin/loom"), { server: "0.1.0", ok: true });
  assert.equal(checkVersion("0.1.3", "loom 0.1.0", "/v/bin/loom").ok, true);
});

test("an older server: both versions, and the pin that matches", () => {
  const c = checkVersion("0.2.0", "loom 0.1.4 (Python 3.11.7, /x)", "/v/bin/loom");
  assert.equal(c.ok, false);
  assert.equal(c.server, "0.1.4");
  assert.match(c.message ?? "", /server is 0\.1\.4 but this extension is 0\.2\.0/);
  assert.match(c.message ?? "", /pipx install --force 'loom-lsp==0\.2\.\*'/);
  assert.match(c.message ?? "", /in the environment of \/v\/bin\/loom/);
});

test("a newer server: update the extension, or pin the server", () => {
  const c = checkVersion("0.1.0", "loom 1.0.0", "/v/bin/loom");
  assert.equal(c.ok, false);
  assert.match(c.message ?? "", /Update the Loom extension to 1\.0/);
  assert.match(c.message ?? "", /install a matching server: pipx install --force 'loom-lsp==0\.1\.\*', or pip install -U 'loom-lsp==0\.1\.\*' in the environment of \/v\/bin\/loom\./);
});

test("a server without --version is too old, with the same advice", () => {
  for (const out of [undefined, "usage: loom [-h]\nloom: error: the following arguments are required: cmd"]) {
    const c = checkVersion("0.1.0", out, "/usr/bin/python3 -m loom.cli");
    assert.equal(c.ok, false);
    assert.equal(c.server, undefined);
    assert.match(c.message ?? "", /does not report its version/);
    assert.match(c.message ?? "", /loom-lsp==0\.1\.\*/);
  }
  assert.match(installHint("garbage", "x"), /'loom-lsp'/);
});
