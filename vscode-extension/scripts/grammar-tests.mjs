// Snapshot tests of the TextMate grammars (grammars/tests/*.{loom,md,txt} against their .snap
// files) with vscode-tmgrammar-snap. `--update` rewrites the snapshots.
import { spawnSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const tests = join(here, "..", "..", "grammars", "tests");
const bin = join(here, "..", "node_modules", ".bin", "vscode-tmgrammar-snap");
const update = process.argv.includes("--update") ? ["-u"] : [];
const r = spawnSync(
  bin,
  ["--config", join(tests, "grammars.json"), ...update, join(tests, "*.loom"), join(tests, "*.md"), join(tests, "*.txt")],
  { stdio: "inherit" },
);
process.exit(r.status ?? 1);
