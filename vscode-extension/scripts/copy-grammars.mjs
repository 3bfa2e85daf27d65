// Copy the TextMate grammars from the repository's grammars/ into out/grammars/ (packaged).
import { copyFileSync, mkdirSync, readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const src = join(here, "..", "..", "grammars");
const dst = join(here, "..", "out", "grammars");
mkdirSync(dst, { recursive: true });
for (const f of readdirSync(src)) {
  if (f.endsWith(".tmLanguage.json")) copyFileSync(join(src, f), join(dst, f));
}
