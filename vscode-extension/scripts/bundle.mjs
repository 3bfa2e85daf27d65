// Bundle the extension with esbuild: src/extension.ts and everything it imports
// (vscode-languageclient included) into one file, out/extension.js, the manifest's `main`.
// One file loads faster than 200 modules from node_modules, and the .vsix then needs no
// node_modules at all. `tsc` still type-checks and builds out/src and out/test for the unit
// tests; this only packages. `--watch` rebuilds on change.
import * as esbuild from "esbuild";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const options = {
  entryPoints: [join(root, "src", "extension.ts")],
  outfile: join(root, "out", "extension.js"),
  bundle: true,
  platform: "node",
  format: "cjs",
  // VS Code 1.91 (engines.vscode) runs extensions on Node 20
  target: "node20",
  external: ["vscode"],
  // smaller, but the names in a stack trace of the user's log stay readable
  minifyWhitespace: true,
  minifySyntax: true,
  // a map only while developing (--watch): the .vsix ships none, so points at none
  sourcemap: process.argv.includes("--watch") ? "linked" : false,
  logLevel: "warning",
  metafile: true,
};
if (process.argv.includes("--watch")) {
  const ctx = await esbuild.context(options);
  await ctx.watch();
} else {
  const result = await esbuild.build(options);
  const bytes = Object.values(result.metafile.outputs).find((o) => o.entryPoint)?.bytes ?? 0;
  console.log(`out/extension.js: ${(bytes / 1024).toFixed(0)} KB from ${Object.keys(result.metafile.inputs).length} modules`);
}
