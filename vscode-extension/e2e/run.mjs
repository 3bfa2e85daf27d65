#!/usr/bin/env node
// End-to-end test of the Loom extension in a real VS Code: code-server (from npm) serving the
// workbench, headless Chromium (Debian's) driven by playwright-core.
//
//   node e2e/run.mjs --vsix loom.vsix --loom /path/to/.venv/bin/loom [--cache DIR] [--out DIR]
//
// It installs the .vsix into a fresh code-server profile, points loom.server.path at the
// given `loom` and loom.database at a temporary database filled by `loom demo --no-editor`,
// then in the browser: opens the demo's path document from the Loom view, and checks that
// the prose is shown (language Loom), that typing `→ vi` offers `view` in the suggest widget,
// that hovering the model's text shows the node's card with its summary, that the
// "◀ k/n ▶" code lens cycles siblings (the text changes), and that saving goes through
// (loom/save) without an error. The subject model is a local server speaking the OpenAI
// completions wire format with logprobs: "Loom: Suggest Continuations" shows continuations as
// ghost text that alt+] cycles, ctrl+right accepts a word of and Tab the rest of; hovering a
// model token shows its alternatives; the alternative's code action splits the node and
// continues from it; "Loom: Toggle Token Probabilities" colours the tokens; "Loom: Score the
// Writer's Words" colours a typed paragraph and marks its least likely word; `→ explore` saved
// lets the collaborator grow the tree (a scripted chat model on the same server judges each
// branch, the weak one is pruned, the overview shows the scores) and the Cancel of its
// progress notification ends it with nothing half-written; suggestions dismissed with Escape,
// then one accepted with Tab, are in `loom export-preferences` (shown, dismissed, accepted,
// a DPO pair). Screenshots go to --out (default /tmp/loom-vscode-e2e);
// on failure the code-server output and the extension's log are printed.
// Exit code 0 on success, 1 on a failed check, 2 on a setup problem.

import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { createServer as createHttpServer } from "node:http";
import { createRequire } from "node:module";
import { tmpdir, homedir } from "node:os";
import { dirname, join, resolve } from "node:path";

// ── arguments ──
const argv = process.argv.slice(2);
function opt(name, fallback) {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 && i + 1 < argv.length ? argv[i + 1] : fallback;
}
const CACHE = resolve(opt("cache", process.env.LOOM_E2E_CACHE || join(homedir(), ".cache", "loom-vscode-e2e")));
const VSIX = resolve(opt("vsix", join(dirname(new URL(import.meta.url).pathname), "..", "loom.vsix")));
const LOOM = opt("loom", process.env.LOOM_BIN || "");
const OUT = resolve(opt("out", process.env.LOOM_E2E_OUT || "/tmp/loom-vscode-e2e"));
const CHROMIUM = opt("chromium", process.env.CHROMIUM || "/usr/bin/chromium");
const KEEP = argv.includes("--keep");
const CODE_SERVER = join(CACHE, "tools", "node_modules", ".bin", "code-server");
const NODE24_BIN = join(CACHE, "node24", "node_modules", ".bin");

/** A tool is missing: exit 2 (the pytest wrapper skips, unless CI requires the test). */
function setupError(msg) {
  console.error(`SETUP: ${msg}`);
  process.exit(2);
}
/** Anything else before the browser starts: a failure (exit 1). */
function fatal(msg) {
  console.error(`✗ ${msg}`);
  console.log("vscode-e2e: 0 passed, 1 failed");
  process.exit(1);
}
if (!LOOM || !existsSync(LOOM)) setupError(`no loom executable (--loom): ${LOOM || "(not given)"}`);
if (!existsSync(VSIX)) setupError(`no .vsix at ${VSIX} (bash scripts/build-vsix.sh)`);
if (!existsSync(CODE_SERVER)) setupError(`no code-server at ${CODE_SERVER} (bash scripts/vscode-e2e-setup.sh)`);
if (!existsSync(CHROMIUM)) setupError(`no Chromium at ${CHROMIUM} (apt-get install chromium)`);
const requireFromTools = createRequire(join(CACHE, "tools", "package.json"));
let chromium;
try {
  ({ chromium } = requireFromTools("playwright-core"));
} catch (err) {
  setupError(`playwright-core is not installed in ${CACHE}/tools: ${err.message}`);
}

mkdirSync(OUT, { recursive: true });
const WORK = mkdtempSync(join(tmpdir(), "loom-vscode-e2e-"));
const ENV = {
  ...process.env,
  PATH: `${NODE24_BIN}:${process.env.PATH}`,
  XDG_CONFIG_HOME: join(WORK, "xdg-config"),
  XDG_DATA_HOME: join(WORK, "xdg-data"),
};
const t0 = Date.now();
const log = (msg) => console.log(`[${((Date.now() - t0) / 1000).toFixed(1).padStart(5)}s] ${msg}`);

// ── the database: the demo tree ──
const DB = join(WORK, "loom.db");
{
  const r = spawnSync(LOOM, ["--db", DB, "demo", "--no-editor"], { encoding: "utf8", env: ENV });
  if (r.status !== 0) fatal(`loom demo failed (${r.status}): ${r.stderr || r.stdout}`);
  log(`demo database: ${DB}`);
}

// ── the subject model: a local server speaking the OpenAI completions wire format with
// logprobs (each token with its top alternatives), read by the real SDK in the real server ──
const tok = (t, lp, alts = [[t, lp]]) => ({ t, lp, alts });
const CAT = [tok(" The", -0.1, [[" The", -0.1], [" A", -2.6]]), tok(" cat", -0.7, [[" cat", -0.7], [" dog", -1.1]]),
  tok(" sat", -1.6, [[" lay", -0.9], [" sat", -1.6], [" stood", -2.3]]), tok(" on", -0.05), tok(" the", -0.2),
  tok(" mat.", -3.5, [[" rug.", -0.6], [" mat.", -3.5]])];
const DOG = [tok(" A", -1.0), tok(" dog", -0.5), tok(" barked.", -0.3)];
const FOX = [tok(" Then", -1.2), tok(" silence.", -0.8)];
const AFTER_LAY = [tok(" down", -0.4), tok(" to", -0.9), tok(" sleep.", -0.2)];
const textOf = (tokens) => tokens.map((x) => x.t).join("");
/** What the model answers next: one token list per choice (cycled to the n asked for). */
const modelScript = [];
const modelRequests = [];
/** The scoring requests (→ score: echo with logprobs). */
const scoreRequests = [];
/** The judge's replies (the collaborator's chat model, → explore), in order, and what it was asked. */
const judgeScript = [];
const judgeRequests = [];
/** A text as one token per word (the checks that only read the words). */
const words = (text) => text.match(/\s*\S+/g).map((w) => tok(w, -0.5));
const fakeModel = createHttpServer((req, res) => {
  let body = "";
  req.on("data", (d) => { body += d; });
  req.on("end", async () => {
    const payload = JSON.parse(body || "{}");
    if (req.url === "/infill") { // a server without llama.cpp's infill: → fill asks with suffix
      res.writeHead(404, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: { message: "File Not Found", type: "not_found_error", code: 404 } }));
      return;
    }
    if (Array.isArray(payload.messages)) { // the collaborator's chat model: → explore's judge
      judgeRequests.push(payload);
      const reply = judgeScript.shift() ?? "5/10 — it will do";
      const chunk = (delta, finish) => `data: ${JSON.stringify({ id: "chat-fake", object: "chat.completion.chunk", created: 1700000000, model: "judge-chat", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write(chunk({ role: "assistant", content: reply }, null));
      res.write(chunk({}, "stop"));
      res.end("data: [DONE]\n\n");
      return;
    }
    if (payload.echo) { // → score: the prompt's own log-probabilities, as OpenAI's legacy completions echo them
      scoreRequests.push(payload);
      const tokens = [], offsets = [], values = [], tops = [];
      for (const m of payload.prompt.matchAll(/\s*\S+|\s+/g)) {
        const lp = m[0].includes("quixotic") ? Math.log(0.0002) : Math.log(0.5);
        tokens.push(m[0]); offsets.push(m.index);
        values.push(tokens.length === 1 ? null : lp);
        tops.push(tokens.length === 1 ? null : { [m[0]]: lp, " the": Math.log(0.3) });
      }
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ id: "cmpl-echo", object: "text_completion", created: 1700000000, model: "fake-base",
        choices: [{ index: 0, text: payload.prompt, finish_reason: "length",
          logprobs: { tokens, token_logprobs: values, top_logprobs: tops, text_offset: offsets } }] }));
      return;
    }
    modelRequests.push(payload);
    // an entry is the choices' token lists, or { choices, delayMs } to stream slowly, and
    // { …, holdAt, hold } to stop after holdAt tokens until the promise hold settles
    const next = modelScript.shift() ?? [FOX];
    const planned = Array.isArray(next) ? next : next.choices;
    const delayMs = Array.isArray(next) ? 0 : next.delayMs;
    const choices = Array.from({ length: payload.n || 1 }, (_, i) => planned[i % planned.length]);
    res.writeHead(200, { "content-type": "text/event-stream" });
    const frame = (choice) => `data: ${JSON.stringify({ id: "cmpl-fake", object: "text_completion", created: 1700000000, model: "fake-base", choices: [choice] })}\n\n`;
    const longest = Math.max(...choices.map((c) => c.length));
    for (let step = 0; step < longest; step++) {
      if (delayMs) await new Promise((r) => setTimeout(r, delayMs));
      if (!Array.isArray(next) && next.hold && step === next.holdAt) await next.hold;
      if (res.destroyed) return; // the client hung up (a cancelled generation)
      choices.forEach((tokens, index) => {
        const t = tokens[step];
        if (!t) return;
        res.write(frame({ text: t.t, index, finish_reason: null,
          logprobs: { tokens: [t.t], token_logprobs: [t.lp], top_logprobs: [Object.fromEntries(t.alts)] } }));
      });
    }
    choices.forEach((_, index) => res.write(frame({ text: "", index, logprobs: null, finish_reason: "length" })));
    res.end("data: [DONE]\n\n");
  });
});
await new Promise((r) => fakeModel.listen(0, "127.0.0.1", r));
{
  const config = join(WORK, "loom-config.toml");
  writeFileSync(config, `[profiles.fake]\nprovider = "openai-compatible"\nmodel = "fake-base"\n` +
    `base_url = "http://127.0.0.1:${fakeModel.address().port}/v1"\nmax_attempts = 1\n\n` +
    // a second served model, for → continue models:fake,second and the model picker
    `[profiles.second]\nprovider = "openai-compatible"\nmodel = "second-base"\n` +
    `base_url = "http://127.0.0.1:${fakeModel.address().port}/v1"\nmax_attempts = 1\n\n` +
    // the collaborator's chat model: the judge of → explore
    `[profiles.judge]\nprovider = "openai-compatible"\nmodel = "judge-chat"\n` +
    `base_url = "http://127.0.0.1:${fakeModel.address().port}/v1"\nmax_attempts = 1\n\n` +
    // a sampler preset, for the model picker's presets
    `[presets.wild]\ntemperature = 1.3\ntop_k = 100\n\n` +
    `[defaults]\nsubject = "fake"\ncollaborator = "judge"\n`);
  Object.assign(ENV, { LOOM_CONFIG: config, LOOM_API_KEY: "sk-test-not-a-secret", LOOM_NO_KEYRING: "1" });
  log(`subject model: the fake at port ${fakeModel.address().port}`);
}
const PYTHON = [join(dirname(LOOM), "python"), join(dirname(LOOM), "python3")].find((p) => existsSync(p)) ?? "python3";
/** Rows of a query on the test's database (through Python's sqlite3). */
function sql(query, ...params) {
  const r = spawnSync(PYTHON, ["-c", "import json,sqlite3,sys; c=sqlite3.connect(sys.argv[1]); "
    + "print(json.dumps(c.execute(sys.argv[2], sys.argv[3:]).fetchall()))", DB, query, ...params], { encoding: "utf8" });
  if (r.status !== 0) throw new Error(`sqlite: ${r.stderr}`);
  return JSON.parse(r.stdout);
}

// ── a fresh code-server profile with the extension installed ──
const USER_DATA = join(WORK, "user-data");
const EXTENSIONS = join(WORK, "extensions");
const FOLDER = join(WORK, "workspace");
mkdirSync(join(USER_DATA, "User"), { recursive: true });
mkdirSync(FOLDER, { recursive: true });
writeFileSync(join(FOLDER, "README.txt"), "A workspace for the Loom e2e test.\n");
// code-server is a remote window: machine(-overridable) settings such as loom.server.path
// are read from the remote ("Machine") settings, not from the user settings.
mkdirSync(join(USER_DATA, "Machine"), { recursive: true });
writeFileSync(join(USER_DATA, "Machine", "settings.json"), JSON.stringify({ "loom.server.path": LOOM, "loom.database": DB }, null, 2));
const settings = {
  "workbench.startupEditor": "none",
  "workbench.tips.enabled": false,
  "workbench.welcomePage.walkthroughs.openOnInstall": false,
  "security.workspace.trust.enabled": false,
  "telemetry.telemetryLevel": "off",
  "update.mode": "none",
  "extensions.autoCheckUpdates": false,
  "extensions.autoUpdate": false,
  "extensions.ignoreRecommendations": true,
  "chat.disableAIFeatures": true,
  "chat.commandCenter.enabled": false,
  "workbench.colorTheme": "Default Dark Modern",
  "editor.minimap.enabled": false,
  "editor.hover.delay": 200,
  "files.hotExit": "off",
  "loom.trace.server": "messages",
  "window.restoreWindows": "none",
};
writeFileSync(join(USER_DATA, "User", "settings.json"), JSON.stringify(settings, null, 2));

{
  const r = spawnSync(CODE_SERVER, ["--user-data-dir", USER_DATA, "--extensions-dir", EXTENSIONS, "--install-extension", VSIX],
    { encoding: "utf8", env: ENV, timeout: 180_000 });
  const out = `${r.stdout}\n${r.stderr}`;
  if (r.status !== 0 || !/successfully installed/i.test(out)) fatal(`--install-extension failed (${r.status}):\n${out}`);
  log(`installed ${VSIX}`);
}

async function freePort() {
  return new Promise((res, rej) => {
    const s = createServer();
    s.on("error", rej);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => res(port));
    });
  });
}

const PORT = Number(process.env.LOOM_E2E_PORT || (await freePort()));
let serverOut = "";
const server = spawn(CODE_SERVER, [
  "--auth", "none", "--bind-addr", `127.0.0.1:${PORT}`, "--disable-telemetry", "--disable-update-check",
  "--disable-workspace-trust", "--disable-getting-started-override", "--log", "trace",
  "--user-data-dir", USER_DATA, "--extensions-dir", EXTENSIONS, FOLDER,
], { env: ENV, detached: true, stdio: ["ignore", "pipe", "pipe"] });
server.stdout.on("data", (d) => { serverOut += d; });
server.stderr.on("data", (d) => { serverOut += d; });

let browserContext;
function cleanup() {
  try { process.kill(-server.pid, "SIGTERM"); } catch { /* gone */ }
  try { fakeModel.close(); } catch { /* closed */ }
  if (!KEEP) {
    try { rmSync(WORK, { recursive: true, force: true }); } catch { /* best effort */ }
  }
}

function extensionLogs() {
  const found = [];
  const walk = (dir) => {
    let entries = [];
    try { entries = readdirSync(dir); } catch { return; }
    for (const e of entries) {
      const p = join(dir, e);
      let st;
      try { st = statSync(p); } catch { continue; }
      if (st.isDirectory()) walk(p);
      else if (/Loom|loom/.test(e) && e.endsWith(".log")) found.push(p);
      else if (e === "exthost.log" || e === "remoteexthost.log") found.push(p);
    }
  };
  walk(join(USER_DATA, "logs"));
  return found.map((p) => `── ${p} ──\n${readFileSync(p, "utf8").split("\n").slice(-80).join("\n")}`).join("\n");
}

async function waitForServer() {
  const deadline = Date.now() + 90_000;
  while (Date.now() < deadline) {
    if (server.exitCode !== null) throw new Error(`code-server exited (${server.exitCode}):\n${serverOut}`);
    try {
      const r = await fetch(`http://127.0.0.1:${PORT}/healthz`);
      if (r.ok) return;
    } catch { /* not yet */ }
    await new Promise((r) => setTimeout(r, 300));
  }
  throw new Error(`code-server did not answer on port ${PORT}:\n${serverOut}`);
}

const results = [];
let page;
let step = "start";

async function shot(name) {
  if (!page) return undefined;
  const file = join(OUT, `${name}.png`);
  try {
    await page.screenshot({ path: file });
    return file;
  } catch {
    return undefined;
  }
}

/** Text of the active editor's visible lines, whitespace removed (wrapping/nbsp-proof). */
async function editorText() {
  return page.evaluate(() => {
    /* global document -- this function runs in the page */
    // the editor shown in the active group: a group keeps the controls of editors it showed
    // before (a diff, another kind of document) hidden in its DOM, and the first one in the
    // DOM need not be the one on the screen
    const shown = (el) => { const r = el.getBoundingClientRect(); return r.width > 0 && r.height > 0; };
    const inGroup = [...document.querySelectorAll(".editor-group-container.active .monaco-editor .view-lines")];
    const ed = inGroup.find((el) => shown(el) && el.closest(".monaco-editor.focused"))
      ?? inGroup.find(shown) ?? inGroup[0] ?? document.querySelector(".monaco-editor .view-lines");
    if (!ed) return "";
    // the lines in the order they are on screen: Monaco reuses line elements, and after a
    // jump (Ctrl+End) their order in the DOM need not be their order by position
    const lines = [...ed.children].sort((a, b) => (parseFloat(a.style.top) || 0) - (parseFloat(b.style.top) || 0));
    return lines.map((l) => l.textContent).join("").replace(/\s+/g, "").replace(/\u00a0/g, "");
  });
}
const squash = (s) => s.replace(/\s+/g, "");
/** The editor's text without the inlay hints at node boundaries (VS Code may elide them). */
async function proseText() {
  return (await editorText()).replace(/¦›?[0-9a-z']*…?(\(notext\))?(◀\d*(\/\d*)?(▶|…)?)?/g, "");
}

/** Wait for the editor's prose to hold `needle`; on a timeout, say what it held instead
 * (its end, and the rendered lines in DOM order with their offsets). */
async function waitForProse(needle, what, timeout) {
  let seen = "";
  try {
    return await waitFor(async () => (seen = await proseText()).includes(needle), what, timeout);
  } catch (err) {
    const lines = await page.evaluate(() => [...document.querySelectorAll(".editor-group-container.active .monaco-editor .view-lines")]
      .map((el) => { const r = el.getBoundingClientRect(); return `${r.width}x${r.height}: ${[...el.children].map((c) => `${c.style.top}=${c.textContent.slice(0, 40)}`).join(" | ")}`; }));
    throw new Error(`${err.message} (the text ends “…${seen.slice(-200)}”; the editors' lines: ${lines.join(" ;; ").slice(0, 3000)})`);
  }
}

async function waitFor(fn, what, timeout = 20_000, interval = 250) {
  const deadline = Date.now() + timeout;
  let last;
  while (Date.now() < deadline) {
    try {
      last = await fn();
      if (last) return last;
    } catch (err) {
      last = err;
    }
    await new Promise((r) => setTimeout(r, interval));
  }
  throw new Error(`timed out waiting for ${what}${last instanceof Error ? `: ${last.message}` : ""}`);
}

async function check(name, fn) {
  step = name;
  const started = Date.now();
  await fn();
  results.push(`✓ ${name} (${((Date.now() - started) / 1000).toFixed(1)}s)`);
  log(`✓ ${name}`);
}

/** Click in the middle of the first word of `text` where the editor shows it (found in
 * the DOM's text nodes, so the click lands on that text and nowhere near a boundary). */
async function clickOnText(text) {
  const box = await waitFor(async () => page.evaluate((needle) => {
    const root = document.querySelector(".editor-group-container.active .view-lines");
    if (!root) return null;
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    const word = needle.split(" ")[0];
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      const flat = n.textContent.replace(/\u00a0/g, " ");
      const at = flat.indexOf(needle);
      if (at < 0) continue;
      const range = document.createRange();
      range.setStart(n, at);
      range.setEnd(n, at + word.length);
      const r = range.getBoundingClientRect();
      if (r.width > 0) return { x: r.x + r.width / 2, y: r.y + r.height / 2 };
    }
    return null;
  }, text), `"${text}" on screen`, 15_000, 300);
  await page.mouse.click(box.x, box.y);
}

/** The hover card (whitespace removed) shown with the mouse on the editor's `text`, once
 * it says `pattern`. Monaco re-renders lines as tokens arrive: the text's box is found
 * afresh on each try. */
async function hoverOn(text, pattern) {
  const span = page.locator(".editor-group-container.active .view-lines span", { hasText: text }).last();
  const hover = page.locator(".monaco-hover:not(.hidden)", { hasText: pattern });
  await waitFor(async () => {
    const box = await span.boundingBox({ timeout: 2_000 }).catch(() => null);
    if (!box) return false;
    await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
    await page.mouse.move(box.x + box.width / 2 + 3, box.y + box.height / 2);
    await page.waitForTimeout(700);
    return (await hover.count()) > 0 && (await hover.first().isVisible());
  }, `the hover on "${text}"`, 25_000, 300);
  return squash((await hover.first().textContent()) ?? "");
}

async function runCommand(title) {
  const input = page.locator(".quick-input-widget input");
  await page.keyboard.press("F1");
  await input.waitFor({ state: "visible", timeout: 10_000 });
  // a palette opened while focus moves (a panel just shown) can close again at once: open it
  // again, as a person would
  if (!(await input.fill(`>${title}`, { timeout: 5_000 }).then(() => true, () => false))) {
    log(`the command palette closed before “${title}” was typed: F1 again`);
    await page.keyboard.press("F1");
    await input.waitFor({ state: "visible", timeout: 10_000 });
    await input.fill(`>${title}`);
  }
  await page.waitForTimeout(400);
  // the row of exactly this command: Enter takes the first, and a recently used longer
  // title ("Loom: Continue With Options…" for "Loom: Continue") comes first
  const rows = page.locator(".quick-input-widget .monaco-list-row");
  for (let i = 0; i < await rows.count(); i++) {
    const text = ((await rows.nth(i).textContent()) ?? "").trimStart();
    if (text.startsWith(title) && !/^\s/.test(text.slice(title.length))) {
      if (i > 0) {
        await rows.nth(i).click();
        return;
      }
      break;
    }
  }
  await page.keyboard.press("Enter");
}

/**
 * Find `text` in the active editor as a writer does (Ctrl+F, Enter: the first match selected
 * and on screen); the find widget's count ("1 of 1", "No results").
 */
async function findInEditor(text) {
  await page.locator(".editor-group-container.active .monaco-editor .view-lines:visible").first().click();
  await page.keyboard.press("Control+f");
  const widget = page.locator(".editor-group-container.active .find-widget.visible");
  await widget.locator("textarea, input").first().fill(text);
  await page.keyboard.press("Enter");
  const count = (await widget.locator(".matchesCount").first().textContent()) ?? "";
  // its close button, not Escape (which would also hide the notifications shown)
  await widget.locator(".codicon-widget-close").first().click();
  return count.trim();
}

/** The ghost text of the inline suggestion shown in the active editor ("" when none). */
async function ghostText() {
  return page.evaluate(() => {
    const root = document.querySelector(".editor-group-container.active .monaco-editor") ?? document;
    return [...root.querySelectorAll(".ghost-text-decoration, .ghost-text-decoration-preview, .ghost-text")]
      .map((e) => e.textContent).join("").replace(/\u00a0/g, " ");
  });
}

/** The text (squashed) of the sibling picker's preview, shown below the editor; null when none. */
async function previewText() {
  return page.evaluate(() => {
    for (const g of document.querySelectorAll(".editor-group-container")) {
      const tab = [...g.querySelectorAll(".tab.active")].find((t) => t.textContent.includes("Siblings of"));
      if (!tab) continue;
      // the lines in the order they are drawn (Monaco reuses their elements out of order)
      const lines = [...g.querySelectorAll(".monaco-editor .view-lines .view-line")]
        .sort((a, b) => parseFloat(a.style.top) - parseFloat(b.style.top));
      return lines.map((l) => l.textContent).join("").replace(/\s+/g, "");
    }
    return null;
  });
}

/** The active editor's text as the document has it: visible lines, whitespace removed, without
 *  the ghost text and the `︱a7x2` inlay hints at node boundaries. */
async function docText() {
  const text = await page.evaluate(() => {
    const root = document.querySelector(".editor-group-container.active .monaco-editor .view-lines");
    if (!root) return "";
    const copy = root.cloneNode(true);
    copy.querySelectorAll(".ghost-text-decoration, .ghost-text-decoration-preview, .ghost-text").forEach((e) => e.remove());
    return copy.textContent;
  });
  // a hint is ¦a7x2q9 ◀ 1/2 ▶ (model text: ¦›a7x2q9), or cut short where space is tight: ¦›a7…
  return squash(text.replace(/\u00a0/g, " ")).replace(/︱›?(?:[0-9a-z]{6}'*|[0-9a-z']{0,6}…)/g, "")
    .replace(/¦›?[0-9a-z']*…?(\(notext\))?(◀\d*(\/\d*)?(▶|…)?)?/g, "");
}

/* global NodeFilter, getComputedStyle, window, MutationObserver -- the functions below that use them run in the page */

/** The middle of `word` where it first appears (inside `context`) in the active editor. */
async function wordBox(context, word) {
  return page.evaluate(([ctx, w]) => {
    const root = document.querySelector(".editor-group-container.active .monaco-editor .view-lines");
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      const text = n.textContent.replace(/\u00a0/g, " ");
      const at = text.indexOf(ctx);
      if (at < 0) continue;
      const start = at + ctx.indexOf(w);
      const range = document.createRange();
      range.setStart(n, start);
      range.setEnd(n, start + w.length);
      const r = range.getBoundingClientRect();
      return { x: r.x + r.width / 2, y: r.y + r.height / 2 };
    }
    return null;
  }, [context, word]);
}

/** The colour a model token is drawn in (the span holding exactly `token`; `trim`: the span
 *  holding it with the spaces around it). */
async function colourOf(token, trim = false) {
  return page.evaluate(([t, tr]) => {
    const root = document.querySelector(".editor-group-container.active .monaco-editor .view-lines");
    const text = (s) => { const x = s.textContent.replace(/\u00a0/g, " "); return tr ? x.trim() : x; };
    const span = [...root.querySelectorAll("span span")].find((s) => text(s) === t);
    return span ? getComputedStyle(span).color : null;
  }, [token, trim]);
}

const humanTip = () => sql("SELECT n.content FROM position p JOIN participant h ON h.id = p.participant "
  + "JOIN node n ON n.id = p.tip WHERE h.name = 'human'")[0]?.[0];

let failed = false;
try {
  await waitForServer();
  log(`code-server on 127.0.0.1:${PORT}`);
  browserContext = await chromium.launchPersistentContext(join(WORK, "chromium-profile"), {
    executablePath: CHROMIUM,
    headless: true,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
      "--disable-component-update", "--disable-sync", "--disable-quic"],
    viewport: { width: 1400, height: 900 },
  });
  page = browserContext.pages()[0] ?? (await browserContext.newPage());
  const consoleErrors = [];
  page.on("console", (m) => { if (m.type() === "error") consoleErrors.push(m.text()); });

  await check("workbench loads", async () => {
    await page.goto(`http://127.0.0.1:${PORT}/?folder=${encodeURIComponent(FOLDER)}`, { waitUntil: "domcontentloaded" });
    await page.locator(".monaco-workbench").waitFor({ timeout: 90_000 });
    await page.locator(".activitybar").waitFor({ timeout: 60_000 });
  });

  await check("the Loom view lists the demo tree and its current path", async () => {
    const tab = page.locator('.activitybar .action-item a[aria-label^="Loom"], .activitybar [role="tab"][aria-label^="Loom"]').first();
    try {
      await tab.waitFor({ timeout: 30_000 });
      await tab.click();
    } catch {
      await runCommand("Loom: Focus on Trees View");
    }
    const row = page.locator(".monaco-list-row", { hasText: "The House at the End of the Lane" });
    await row.first().waitFor({ timeout: 60_000 });
    // the tree is expanded: its current path's nodes, labelled [localId] author
    await waitFor(async () => (await page.locator(".monaco-list-row", { hasText: /\[[0-9a-z]{3,}'?\] (human|model)/ }).count()) >= 3,
      "the path's nodes in the view", 30_000);
  });

  await check("clicking the current node opens the path document with its prose (language Loom)", async () => {
    const current = page.locator(".monaco-list-row:has(.codicon-circle-filled)").first();
    await current.waitFor({ timeout: 20_000 });
    await current.click();
    await waitFor(async () => (await editorText()).includes(squash("The house stood empty at the end of the lane.")),
      "the prose in the editor", 30_000);
    const text = await editorText();
    for (const phrase of ["She hadn't visited since her mother's death,", "twenty past four"]) {
      if (!text.includes(squash(phrase))) throw new Error(`the editor does not show "${phrase}"`);
    }
    await waitFor(async () => {
      const mode = await page.locator("#status\\.editor\\.mode").textContent().catch(() => "");
      return /Loom/.test(mode ?? "");
    }, "the language mode Loom in the status bar", 20_000);
    // the tab is named after the tree, not after ids
    const tabTitle = (await page.locator(".tabs-container .tab.active").textContent())?.trim() ?? "";
    log(`active tab: ${tabTitle}`);
    if (!tabTitle.includes("The House at the End of the Lane")) throw new Error(`the tab does not name the tree: "${tabTitle}"`);
    if (/[0-9A-Z]{26}/.test(tabTitle)) throw new Error(`the tab shows a ULID: "${tabTitle}"`);
    await shot("1-path-document");
  });

  await check("the breadcrumbs over a path document name the tree, not its ULID", async () => {
    // before: the bar showed the URI's folders, 01M8CK7A6W… › yk8sjf › the title
    const items = page.locator(".editor-group-container.active .breadcrumbs-control .monaco-breadcrumb-item");
    const text = await waitFor(async () => {
      const t = (await items.allTextContents()).map((x) => x.replace(/\u00a0/g, " ").trim()).join(" › ");
      return t.includes("The House at the End of the Lane") ? t : "";
    }, "the title in the breadcrumbs", 10_000);
    log(`breadcrumbs: ${text}`);
    if (/[0-9A-Z]{26}/.test(text)) throw new Error(`the breadcrumbs show a ULID: "${text}"`);
    await page.locator(".editor-group-container.active .title").screenshot({ path: join(OUT, "1c-breadcrumbs.png") });
  });

  // the server's version as `loom --version` prints it: the extension's handshake reads the same
  const serverVersion = /^loom (\S+)/m.exec(spawnSync(LOOM, ["--version"], { encoding: "utf8" }).stdout ?? "")?.[1];
  /** The Loom item of the language status hover (the `{}` beside the language mode), hovered until it names the server. */
  async function languageStatusItem() {
    const item = page.locator(".hover-language-status", { hasText: `Loom ${serverVersion}` }).first();
    await waitFor(async () => {
      await page.mouse.move(5, 5); // away first: a hover shows again only on entering
      await page.locator("#status\\.languageStatus").hover();
      return item.isVisible({ timeout: 2_000 });
    }, `"Loom ${serverVersion}" in the language status hover`, 30_000, 500);
    return item;
  }
  /** The texts of the output channels' log files whose names match `name` (VS Code writes
   * each channel to a file under the user data's logs), in the order found. */
  function channelLogs(name) {
    const texts = [];
    const walk = (dir) => {
      let entries = [];
      try { entries = readdirSync(dir); } catch { return; }
      for (const e of entries) {
        const p = join(dir, e);
        try { if (statSync(p).isDirectory()) walk(p); else if (name.test(e)) texts.push(readFileSync(p, "utf8")); } catch { /* racing the writer */ }
      }
    };
    walk(join(USER_DATA, "logs"));
    return texts;
  }
  /** What the extension logged in its "Loom" output channel. */
  function loomLog() {
    return channelLogs(/^(\d+-)?Loom\.log$/).join("");
  }

  await check("the language status item names the server's version (loom --version); its Show Logs opens the Loom log", async () => {
    if (!serverVersion) throw new Error("loom --version printed no version");
    const item = await languageStatusItem();
    const detail = ((await item.textContent()) ?? "").replace(/\u00a0/g, " ");
    log(`language status: ${detail}`);
    if (!/as human/.test(detail)) throw new Error(`the item does not say who this editor acts as: "${detail}"`);
    if (/warning|without --version/i.test(detail)) throw new Error(`a version warning for matching versions: "${detail}"`);
    await shot("1d-language-status");
    await item.locator(".monaco-link", { hasText: "Show Logs" }).click();
    // the Output panel shows, on the channel named Loom (its picker is a <select>)
    await waitFor(async () => page.evaluate(() => [...document.querySelectorAll(".part.panel select")]
      .some((sel) => sel.options[sel.selectedIndex]?.text === "Loom")), "the Loom channel in the Output panel", 15_000);
    if (!new RegExp(`loom ${serverVersion.replace(/\./g, "\\.")}, extension`).test(loomLog())) {
      throw new Error("the log does not record the version handshake");
    }
    await shot("1e-server-logs");
    await runCommand("View: Close Panel");
  });

  await check("a path node in the Loom view expands to its siblings and continuations", async () => {
    const row = page.locator(".monaco-list-row", { hasText: /\[[0-9a-z]{3,}\] model\s*and the windows/ }).first();
    await row.waitFor({ timeout: 10_000 });
    await row.locator(".monaco-tl-twistie").click();
    for (const text of ["and the walnut trees", "though the key still hung", "She stopped at the gate", "never sees the house again"]) {
      await page.locator(".monaco-list-row", { hasText: text }).first().waitFor({ timeout: 15_000 })
        .catch(() => { throw new Error(`no row "${text}" under the expanded node`); });
    }
    await shot("1b-view-expanded");
    await row.locator(".monaco-tl-twistie").click();
  });

  await check("typing → vi offers view in the suggest widget", async () => {
    await page.locator(".editor-group-container.active .monaco-editor .view-lines").first().click();
    await page.keyboard.press("Control+End");
    await page.keyboard.press("Enter");
    await page.keyboard.type("→ vi", { delay: 80 });
    const widget = page.locator(".editor-widget.suggest-widget.visible");
    await widget.waitFor({ timeout: 15_000 });
    await waitFor(async () => {
      const labels = await widget.locator(".monaco-list-row .label-name").allTextContents();
      return labels.some((l) => l.trim() === "view" || /^(→\s*)?view$/.test(l.trim()));
    }, "`view` among the suggestions", 10_000);
    const labels = await widget.locator(".monaco-list-row .label-name").allTextContents();
    log(`suggestions: ${labels.map((l) => l.trim()).join(", ")}`);
    await shot("2-completion");
    await page.keyboard.press("Escape");
    // take the line out again: back to the path's own text
    await page.keyboard.press("Shift+Home");
    await page.keyboard.press("Backspace");
    await page.keyboard.press("Backspace");
    await page.keyboard.press("Control+Home");
  });

  await check("hovering the model's text shows the node's card with its summary", async () => {
    const content = await hoverOn("windows seemed to watch", /model/);
    if (!content.includes(squash("the windows seemed to watch her approach"))) {
      throw new Error(`the hover does not show the node's summary: ${content.slice(0, 300)}`);
    }
    if (!/\[[0-9a-z]{3,}'?\]model/.test(content)) throw new Error(`the hover has no [id] model header: ${content.slice(0, 300)}`);
    // before: the node's own text first; a summary (none here: it would repeat the
    // text) only after it, labelled with where it came from
    const own = content.indexOf(squash("the windows seemed to watch her approach"));
    const label = content.search(/summary\(/i);
    if (label >= 0 && own > label) throw new Error(`the hover shows a summary before the node's own text: ${content.slice(0, 300)}`);
    if (/In this passage/.test(content)) throw new Error("a model-written summary in place of the text");
    log(`hover: ${content.slice(0, 160)}`);
    await shot("3-hover");
    await page.mouse.move(5, 5);
    await page.keyboard.press("Escape");
  });

  await check("node boundaries show ◀ k/n ▶ in a glyph that renders, and the view numbers siblings like the lens", async () => {
    const lines = page.locator(".editor-group-container.active .view-lines");
    await waitFor(async () => /◀\s*1\/3\s*▶/.test((await lines.textContent()) ?? ""), "◀ 1/3 ▶ at the boundary of the first branch point", 20_000);
    const text = (await lines.textContent()) ?? "";
    if (text.includes("︱")) throw new Error("the editor still shows ︱ (drawn as a box in common fonts)");
    if (!text.includes("¦")) throw new Error("no ¦ node boundary in the editor");
    // none cut short ("¦›csx…" without its ◀ 1/2 ▶: VS Code cuts a line's inlay hints past
    // 43 characters in all, and a wrapped paragraph is one line)
    const cut = text.match(/¦›?[0-9a-z']*…|◀\s*\d*…|◀\s*\d+\/\d+…/);
    if (cut) throw new Error(`a node marker is cut short: ${cut[0]}`);
    // the Loom view: the same node is "◀ 1/3 ▶" there (it said 2/3: one too high)
    const row = page.locator(".monaco-list-row", { hasText: /\[[0-9a-z]{3,}\] model\s*and the windows/ }).first();
    const desc = (await row.textContent()) ?? "";
    if (!/◀ 1\/3 ▶/.test(desc)) throw new Error(`the Loom view numbers the sibling as: ${desc}`);
  });

  await check("the sibling picker previews the whole text of the sibling it is on; Escape leaves the view as it was", async () => {
    // before: one truncated line per sibling and no preview
    await clickOnText("windows seemed to watch");
    const before = await editorText();
    const groups = await page.locator(".editor-group-container").count();
    await runCommand("Loom: Siblings Side by Side");
    const rows = page.locator(".quick-input-widget .monaco-list-row");
    await waitFor(async () => (await rows.count()) === 3, "three siblings in the picker", 15_000);
    // beside the editor, the current sibling whole, marked as the one shown
    const current = await waitFor(async () => {
      const t = await previewText();
      return t && t.includes(squash("windows seemed to watch her approach with something like reproach.")) ? t : "";
    }, "the current sibling's whole text in the preview", 15_000);
    if (!/^●\d\/3\[[0-9a-z]{3,}\]model·shownnow/.test(current)) throw new Error(`the preview's header: ${current.slice(0, 120)}`);
    if (!(await page.locator(".quick-input-widget").isVisible())) throw new Error("the picker closed when the preview opened");
    // moving in the picker moves the preview; the keyboard stays in the picker
    const seen = [current];
    for (let i = 0; i < 2; i++) {
      await page.keyboard.press("ArrowDown");
      seen.push(await waitFor(async () => {
        const t = await previewText();
        return t && !seen.includes(t) ? t : "";
      }, `the preview to follow the picker (step ${i + 1})`, 10_000));
    }
    const other = seen.find((t) => t.includes(squash("walnut trees had dropped")));
    if (!other || !/Entershowsitinplaceof\[[0-9a-z]{3,}\]/.test(other)) throw new Error(`no preview of the walnut sibling: ${seen.map((t) => t.slice(0, 80)).join(" | ")}`);
    await shot("sibling-picker");
    await page.keyboard.press("Escape");
    await waitFor(async () => (await previewText()) === null, "the preview closed", 10_000);
    await page.locator(".quick-input-widget").waitFor({ state: "hidden", timeout: 10_000 });
    await waitFor(async () => (await page.locator(".editor-group-container").count()) === groups, "the editor groups as they were", 10_000);
    if ((await editorText()) !== before) throw new Error("Escape changed the text");
    const focused = await page.evaluate(() => !!document.activeElement?.closest(".editor-group-container.active .monaco-editor"));
    if (!focused) throw new Error("the editor does not have the focus back");
    await shot("sibling-picker-escaped");
  });

  await check("Loom: Siblings Side by Side shows every sibling's text and switches to the one picked", async () => {
    await clickOnText("windows seemed to watch");
    await runCommand("Loom: Siblings Side by Side");
    const rows = page.locator(".quick-input-widget .monaco-list-row");
    await waitFor(async () => (await rows.count()) === 3, "three siblings in the picker", 15_000);
    const all = squash((await rows.allTextContents()).join(" "));
    for (const t of ["windows seemed to watch", "walnut trees had dropped", "key still hung"]) {
      if (!all.includes(squash(t))) throw new Error(`the picker does not show "${t}": ${all.slice(0, 300)}`);
    }
    const before = await editorText();
    await rows.filter({ hasText: "walnut trees" }).first().click();
    await waitFor(async () => (await editorText()).includes(squash("the walnut trees had dropped")), "the picked sibling in the text", 20_000);
    if ((await editorText()) === before) throw new Error("the text did not change");
    await waitFor(async () => (await previewText()) === null, "the preview closed", 10_000);
    await waitFor(async () => (await page.locator(".tabs-container .tab.active.dirty").count()) === 0, "a clean tab", 10_000);
    // before: the Loom view names the new path at once, not seconds later
    // (the view's current node is the position: the sibling picked)
    await waitFor(async () => (await page.locator(".monaco-list-row:has(.codicon-circle-filled)", { hasText: "walnut" }).count()) > 0,
      "the Loom view's current node on the picked sibling's path", 3_000, 100);
    const tab = (await page.locator(".tabs-container .tab.active").textContent()) ?? "";
    if (!tab.includes("The House at the End of the Lane")) throw new Error(`the tab after the switch: "${tab}"`);
  });

  await check("Loom: Compare with Next Sibling opens the two paths in a diff editor", async () => {
    await clickOnText("walnut trees had dropped");
    await runCommand("Loom: Compare with Next Sibling");
    await page.locator(".editor-group-container.active .monaco-diff-editor").first().waitFor({ timeout: 20_000 });
    await waitFor(async () => /↔/.test((await page.locator(".tabs-container .tab.active").textContent()) ?? ""), "the diff tab", 10_000);
    await shot("compare-siblings");
    await page.keyboard.press("Control+w");
    await page.locator(".editor-group-container.active .monaco-diff-editor").waitFor({ state: "detached", timeout: 10_000 }).catch(() => {});
  });

  await check("Loom: Fill Selection… writes alternatives for a selected word; the sibling picker lists them as versions and picking one swaps only that word", async () => {
    await clickOnText("walnut trees had dropped");
    await page.keyboard.press("Control+d"); // the word under the cursor: "walnut"
    const before = await proseText();
    if (!before.includes(squash("the walnut trees had dropped"))) throw new Error("the walnut sibling is not on the path");
    modelScript.push([[tok("oak", -0.4)], [tok("elm", -0.9)]]);
    const asked = modelRequests.length;
    await runCommand("Loom: Fill Selection");
    const input = page.locator(".quick-input-widget input");
    await input.waitFor({ state: "visible", timeout: 10_000 });
    await input.fill("2");
    await page.keyboard.press("Enter");
    await waitForProse(squash("the oak trees had dropped"), "the first alternative in the word's place", 30_000);
    if ((await proseText()) !== before.replace("walnut", "oak")) throw new Error("the fill changed more than the word");
    const sent = modelRequests[asked];
    if (sent.n !== 2 || !sent.prompt.endsWith("the ") || !sent.suffix.startsWith(" trees had dropped")) {
      throw new Error(`the fill asked ${JSON.stringify({ n: sent.n, prompt: sent.prompt.slice(-20), suffix: sent.suffix.slice(0, 20) })}`);
    }
    await shot("fill-selection");
    // the versions in the sibling picker: the other one swaps only the word
    await clickOnText("oak trees had dropped");
    await runCommand("Loom: Siblings Side by Side");
    const rows = page.locator(".quick-input-widget .monaco-list-row");
    await waitFor(async () => (await rows.filter({ hasText: "elm trees" }).count()) > 0, "the other version in the picker", 15_000);
    await rows.filter({ hasText: "elm trees" }).first().click();
    await waitForProse(squash("the elm trees had dropped"), "the other version in the word's place", 20_000);
    if ((await proseText()) !== before.replace("walnut", "elm")) throw new Error("the switch changed more than the word");
    await waitFor(async () => (await page.locator(".tabs-container .tab.active.dirty").count()) === 0, "a clean tab", 10_000);
    // and back to the original, for the checks after this one
    await clickOnText("elm trees had dropped");
    await runCommand("Loom: Siblings Side by Side");
    await waitFor(async () => (await rows.filter({ hasText: "walnut trees" }).count()) > 0, "the original in the picker", 15_000);
    await rows.filter({ hasText: "walnut trees" }).first().click();
    await waitForProse(squash("the walnut trees had dropped"), "the original back", 20_000);
  });

  await check("the ◀ k/n ▶ code lens cycles siblings (the text changes)", async () => {
    const lens = page.locator(".editor-group-container.active .codelens-decoration a", { hasText: /◀\s*\d+\/\d+\s*▶/ }).first();
    try {
      await lens.waitFor({ timeout: 30_000 });
    } catch {
      const all = await page.locator(".editor-group-container.active .codelens-decoration").allTextContents();
      throw new Error(`no "◀ k/n ▶" code lens in the path document; the lenses shown: ${JSON.stringify(all)}`);
    }
    const title = (await lens.textContent())?.trim();
    const before = await editorText();
    await lens.click();
    await waitFor(async () => (await editorText()) !== before, "the text to change after the sibling switch", 20_000);
    const after = await editorText();
    log(`lens "${title}" clicked; text changed (${before.length} → ${after.length} chars)`);
    // the same branch point now shows the next sibling: ◀ k+1/n ▶
    const m = /◀\s*(\d+)\/(\d+)\s*▶/.exec(title ?? "");
    const k = Number(m[1]);
    const n = Number(m[2]);
    const next = new RegExp(`◀\\s*${(k % n) + 1}/${n}\\s*▶`);
    await waitFor(async () => {
      const titles = await page.locator(".editor-group-container.active .codelens-decoration a").allTextContents();
      return titles.some((t) => next.test(t));
    }, `the lens to show ◀ ${(k % n) + 1}/${n} ▶ after the switch`, 15_000);
    // Loom's own edit leaves the document saved: VS Code must not ask to save it
    await waitFor(async () => (await page.locator(".tabs-container .tab.active.dirty").count()) === 0,
      "the tab to be clean after the sibling switch", 10_000);
    await shot("4-cycled");
  });

  await check("Loom: Next Sibling (alt+]) cycles the branch point before the cursor", async () => {
    const lensRe = /◀\s*(\d+)\/(\d+)\s*▶/;
    const titles = await page.locator(".editor-group-container.active .codelens-decoration a").allTextContents();
    const title = titles.find((t) => lensRe.test(t));
    if (!title) throw new Error(`no ◀ k/n ▶ lens: ${JSON.stringify(titles)}`);
    const [, k, n] = lensRe.exec(title).map(Number);
    const before = await editorText();
    await page.locator(".editor-group-container.active .monaco-editor .view-lines").first().click();
    await page.keyboard.press("Control+End");
    await page.keyboard.press("Alt+BracketRight");
    await waitFor(async () => (await editorText()) !== before, "the text to change after alt+]", 20_000);
    // the node's marker in the prose says where it is now (the lens, one per line, may have
    // moved to a later branch point of the new path)
    const next = `◀${(k % n) + 1}/${n}▶`;
    await waitFor(async () => (await editorText()).includes(next), `the marker to show ${next} after alt+]`, 15_000);
    // and the lenses are the new path's (a click on a stale one cycles the old node)
    await waitFor(async () => !(await page.locator(".editor-group-container.active .codelens-decoration a").allTextContents()).includes(title),
      "the lenses of the new path", 15_000);
    log(`alt+] on "${title.trim()}" → ${(k % n) + 1}/${n}`);
  });

  await check("Ctrl+Z after a sibling switch takes the view back; Ctrl+S writes nothing", async () => {
    // before: the old branch's text came back as an edit of the new branch,
    // and a save made versions of it and a node reading "The"
    const count = () => sql("SELECT count(*) FROM node")[0][0];
    const nodes = count();
    const before = await editorText();
    const lens = page.locator(".editor-group-container.active .codelens-decoration a", { hasText: /◀\s*\d+\/\d+\s*▶/ }).first();
    await lens.click();
    await waitFor(async () => (await editorText()) !== before, "the text to change after the sibling switch", 20_000);
    await page.waitForTimeout(500);
    await page.locator(".editor-group-container.active .monaco-editor .view-lines").first().click();
    await page.keyboard.press("Control+z");
    await waitFor(async () => (await editorText()) === before, "Ctrl+Z to bring the view before the switch back", 20_000);
    await page.keyboard.press("Control+s");
    await page.waitForTimeout(1500);
    if (count() !== nodes) throw new Error(`the save after the undo wrote ${count() - nodes} node(s)`);
    await waitFor(async () => (await page.locator(".tabs-container .tab.active.dirty").count()) === 0,
      "the tab to be clean after the undo and the save", 10_000);
    await shot("4b-undo-after-switch");
  });

  await check("typing and saving commits the text through loom/save", async () => {
    const typed = " She found the key under the third shutter.";
    await page.locator(".editor-group-container.active .monaco-editor .view-lines").first().click();
    await page.keyboard.press("Control+End");
    await page.keyboard.type(typed, { delay: 10 });
    // [loom] files.autoSave is off (the extension's default; code-server's own is afterDelay)
    await page.waitForTimeout(1500);
    if ((await page.locator(".tabs-container .tab.active.dirty").count()) !== 1) throw new Error("the tab is not dirty after typing: auto-saved?");
    await page.keyboard.press("Control+s");
    await waitFor(async () => (await page.locator(".tabs-container .tab.active.dirty").count()) === 0,
      "the tab to be saved (not dirty)", 15_000);
    const errors = await page.locator(".notifications-toasts .notification-toast", { hasText: /Failed to save|✗/ }).allTextContents();
    if (errors.length > 0) throw new Error(`save failed: ${errors.join(" | ")}`);
    // the text is in the tree now: the CLI, on the same database, finds it on the human's path
    const tree = /^(\S+)\s/m.exec(spawnSync(LOOM, ["--db", DB, "trees"], { encoding: "utf8" }).stdout)?.[1];
    await waitFor(async () => {
      const md = spawnSync(LOOM, ["--db", DB, "export", tree, "--format", "md"], { encoding: "utf8" }).stdout;
      return squash(md).includes(squash(typed));
    }, "the saved text in `loom export --format md`", 10_000);
    await shot("5-saved");
  });

  await check("select all, delete, Ctrl+S: a dialog asks first; Cancel writes nothing, Ctrl+Z is the path again with nothing to commit", async () => {
    // issue 47: the save emptied every node on the path without a word, and the undo that
    // followed committed the whole story again as one new node
    const count = () => sql("SELECT count(*) FROM node")[0][0];
    const nodes = count();
    const before = await editorText();
    await page.locator(".editor-group-container.active .monaco-editor .view-lines").first().click();
    await page.keyboard.press("Control+a");
    await page.keyboard.press("Delete");
    await waitFor(async () => (await editorText()).trim() === "", "the editor to be empty", 10_000);
    await page.keyboard.press("Control+s");
    const dialog = page.locator(".monaco-dialog-box");
    await dialog.waitFor({ state: "visible", timeout: 15_000 });
    const asked = (await dialog.textContent()) ?? "";
    if (!/Saving would empty \d+ nodes of this path \(all of its text\)/.test(asked)) throw new Error(`the dialog says: ${asked}`);
    await shot("5b-asked-before-emptying");
    await dialog.getByRole("button", { name: "Cancel" }).click();
    await dialog.waitFor({ state: "hidden", timeout: 10_000 });
    await page.waitForTimeout(1000);
    if (count() !== nodes) throw new Error(`Cancel wrote ${count() - nodes} node(s)`);
    if (sql("SELECT count(*) FROM node WHERE content = '' AND version_of IS NOT NULL")[0][0] !== 0) {
      throw new Error("Cancel made empty versions");
    }
    await page.locator(".editor-group-container.active .monaco-editor .view-lines").first().click();
    await page.keyboard.press("Control+z");
    await waitFor(async () => (await editorText()) === before, "Ctrl+Z to bring the text back", 15_000);
    await page.keyboard.press("Control+s");
    await page.waitForTimeout(1500);
    if (count() !== nodes) throw new Error(`the save after the undo wrote ${count() - nodes} node(s)`);
    await waitFor(async () => (await page.locator(".tabs-container .tab.active.dirty").count()) === 0,
      "the tab to be clean after the undo and the save", 10_000);
    await page.keyboard.press("Escape");  // (the notification of the refused save)
    await shot("5c-undo-is-the-path-again");
  });

  await check("Loom: Suggest Continuations shows them as ghost text: alt+] cycles, ctrl+right accepts a word, Tab the rest", async () => {
    modelScript.push([CAT, DOG, FOX]);
    await page.locator(".editor-group-container.active .monaco-editor .view-lines").first().click();
    await page.keyboard.press("Control+End");
    const tipBefore = humanTip();
    await runCommand("Loom: Suggest Continuations");
    await waitFor(async () => (await ghostText()).includes("The cat sat on the mat."), "the first suggestion as ghost text", 30_000);
    if ((await docText()).includes(squash("The cat sat on the mat.")) || humanTip() !== tipBefore) {
      throw new Error("a suggestion was inserted before it was accepted");
    }
    await shot("8-suggestion");
    await page.keyboard.press("Alt+BracketRight");
    await waitFor(async () => (await ghostText()).includes("A dog barked."), "alt+] to show the next suggestion", 10_000);
    await page.keyboard.press("Alt+BracketLeft");
    await waitFor(async () => (await ghostText()).includes("The cat sat on the mat."), "alt+[ to go back", 10_000);
    await page.keyboard.press("Control+ArrowRight");
    await waitFor(() => humanTip() === " The", "ctrl+right: the accepted word as the path's end (the suggestion split there)", 10_000);
    await waitFor(async () => (await docText()).endsWith(squash("third shutter. The")), "the word in the editor", 10_000);
    await waitFor(async () => (await ghostText()).includes("cat sat on the mat."), "the rest offered", 10_000);
    await page.keyboard.press("Tab");
    await waitFor(() => humanTip() === " cat sat on the mat.", "Tab: the rest as the path's end", 10_000);
    await waitFor(async () => (await docText()).endsWith(squash("third shutter. The cat sat on the mat.")), "the rest in the editor", 10_000);
    // the accepted text is the tree's now: nothing for VS Code to ask to save
    await waitFor(async () => (await page.locator(".tabs-container .tab.active.dirty").count()) === 0,
      "the tab to be clean after the accept", 10_000);
    const human = sql("SELECT count(*) FROM node WHERE author_type = 'human' AND content LIKE '%cat sat%'")[0][0];
    if (human !== 0) throw new Error("the accepted suggestion was committed as the human's text");
    await shot("9-accepted");
  });

  await check("alt+] then ctrl+right takes the word of the suggestion shown (two begin alike), and offers the rest of that one", async () => {
    // before: ctrl+right after alt+] took " The" of the first suggestion, whatever was shown
    const first = words(" The dog barked twice.");
    const second = words(" The fox ran off.");
    modelScript.push([first, second, words(" Then it rained.")]);
    await page.locator(".editor-group-container.active .monaco-editor .view-lines").first().click();
    await page.keyboard.press("Control+End");
    await runCommand("Loom: Suggest Continuations");
    await waitFor(async () => (await ghostText()).includes("The dog barked twice."), "the first suggestion as ghost text", 30_000);
    await page.keyboard.press("Alt+BracketRight");
    await waitFor(async () => (await ghostText()).includes("The fox ran off."), "alt+] to show the second", 10_000);
    await page.keyboard.press("Control+ArrowRight");
    await waitFor(() => humanTip() === " The", "ctrl+right: the word as the path's end", 10_000);
    // the word was cut from the suggestion shown: the rest of the fox is what the path offers
    const rest = () => sql("SELECT n.content FROM position p JOIN participant h ON h.id = p.participant "
      + "JOIN node t ON t.id = p.tip JOIN edge_source s ON s.node = t.id JOIN node n ON n.id = s.target "
      + "WHERE h.name = 'human'").map((r) => r[0]);
    await waitFor(() => JSON.stringify(rest()) === JSON.stringify([" fox ran off."]), `the rest of the second suggestion below the word (got ${JSON.stringify(rest())})`, 10_000);
    await waitFor(async () => (await ghostText()).includes("fox ran off."), "the rest of the fox offered", 10_000);
    await shot("9b-word-of-the-second");
    await page.keyboard.press("Tab");
    await waitFor(() => humanTip() === " fox ran off.", "Tab: the rest of the second as the path's end", 10_000);
    await waitFor(async () => (await docText()).endsWith(squash("The cat sat on the mat. The fox ran off.")), "the second suggestion in the editor", 10_000);
    // the first suggestion is whole, not cut after its first word
    const cut = sql("SELECT count(*) FROM node WHERE content = ' dog barked twice.'")[0][0];
    if (cut !== 0) throw new Error("the first suggestion was cut after its first word");
    await waitFor(async () => (await page.locator(".tabs-container .tab.active.dirty").count()) === 0,
      "the tab to be clean after the accept", 10_000);
  });

  await check("hovering a model token shows its probability and the alternatives", async () => {
    const hover = page.locator(".monaco-hover:not(.hidden)", { hasText: "␣lay" });
    await waitFor(async () => {
      const box = await wordBox("cat sat on", "sat");
      if (!box) return false;
      await page.mouse.move(box.x, box.y);
      await page.mouse.move(box.x + 1, box.y);
      await page.waitForTimeout(700);
      return (await hover.count()) > 0 && (await hover.first().isVisible());
    }, "the token hover", 25_000, 300);
    const content = (await hover.first().textContent()) ?? "";
    for (const want of ["␣sat", "20.2%", "␣lay", "40.7%", "␣stood"]) {
      if (!content.includes(want)) throw new Error(`the token hover lacks ${want}: ${content.slice(0, 300)}`);
    }
    await shot("10-token-hover");
    await page.mouse.move(5, 5);
    await page.keyboard.press("Escape");
  });

  await check("the alternative's code action splits the node, branches with it and continues", async () => {
    modelScript.push([AFTER_LAY]);
    const box = await wordBox("cat sat on", "sat");
    if (!box) throw new Error("no ' sat' in the editor");
    await page.mouse.click(box.x, box.y);
    await runCommand("Loom: Alternatives at Cursor");
    const item = page.locator(".action-widget .monaco-list-row, .context-view .monaco-list-row", { hasText: "␣lay" }).first();
    await item.waitFor({ timeout: 15_000 });
    await shot("11-alternatives");
    await item.click();
    await waitFor(async () => (await docText()).endsWith(squash("third shutter. The cat lay down to sleep.")), "the branch with ' lay', continued", 30_000);
    await waitFor(() => humanTip() === textOf(AFTER_LAY), "the continuation as the path's end", 10_000);
    const [pruned] = sql("SELECT pruned FROM node WHERE content = ' cat sat on the mat.'")[0];
    const kids = sql("SELECT n.content FROM node h JOIN edge_source s ON s.node = h.id JOIN node n ON n.id = s.target "
      + "WHERE h.content = ' cat' ORDER BY n.content").map((r) => r[0]);
    if (pruned !== 1 || JSON.stringify(kids) !== JSON.stringify([" lay", " sat on the mat."])) {
      throw new Error(`unexpected tree after the split: pruned=${pruned} children of ' cat'=${JSON.stringify(kids)}`);
    }
    const prompt = modelRequests.at(-1)?.prompt ?? "";
    if (!prompt.endsWith(" The cat lay")) throw new Error(`the continuation was asked from: …${prompt.slice(-40)}`);
    await shot("12-branched");
  });

  await check("Loom: Toggle Token Probabilities colours model tokens, confident to surprising", async () => {
    const plain = await waitFor(() => colourOf(" lay"), "the ' lay' token's span", 10_000);
    await runCommand("Loom: Toggle Token Probabilities");
    // p(' lay') = 40.7%: the middle colour (#b58900); p(' down') = 67%: #2aa198
    await waitFor(async () => (await colourOf(" lay")) === "rgb(181, 137, 0)", "' lay' in the middle colour", 20_000);
    if ((await colourOf(" down")) !== "rgb(42, 161, 152)") throw new Error(`' down' is ${await colourOf(" down")}`);
    await shot("13-probabilities");
    await runCommand("Loom: Toggle Token Probabilities");
    await waitFor(async () => (await colourOf(" lay")) === plain, "the model colour back", 20_000);
  });

  await check("Loom: Score the Writer's Words colours a typed paragraph and marks its least likely word; off, the mark goes", async () => {
    await page.locator(".editor-group-container.active .monaco-editor .view-lines").first().click();
    await page.keyboard.press("Control+End");
    await page.keyboard.type(" The quixotic heron slept.", { delay: 20 });
    await waitFor(async () => (await docText()).endsWith(squash("The quixotic heron slept.")), "the typed paragraph", 10_000);
    const squiggles = () => page.locator(".editor-group-container.active .monaco-editor .squiggly-info").count();
    if ((await squiggles()) !== 0) throw new Error("a mark before scoring");
    await runCommand("Loom: Score the Writer's Words");
    await waitFor(() => sql("SELECT count(*) FROM node n JOIN node_tokens t ON t.node = n.id WHERE n.author_type = 'human' "
      + "AND n.content LIKE '%quixotic heron%' AND t.scorer IS NOT NULL")[0][0] === 1, "the paragraph committed and scored", 30_000);
    if (!scoreRequests.at(-1)?.prompt?.endsWith(" The quixotic heron slept.")) throw new Error("the scored text was not the path's");
    // the writer's words in the heatmap: p = 0.02% the least likely colour, p = 50% the high one
    await waitFor(async () => (await colourOf("quixotic", true)) === "rgb(220, 50, 47)", "'quixotic' in the surprising colour", 20_000);
    // (adjacent tokens of one colour are one span)
    const heron = await colourOf("heron slept.", true);
    if (heron !== "rgb(42, 161, 152)") throw new Error(`'heron slept.' is ${heron}`);
    // and marked: an Information squiggle, the model's choice in its message
    await waitFor(async () => (await squiggles()) > 0, "the Information mark under 'quixotic'", 20_000);
    const box = await wordBox("quixotic", "quixotic");
    if (!box) throw new Error("no 'quixotic' in the editor");
    const hover = page.locator(".monaco-hover:not(.hidden)", { hasText: "is unlikely here" });
    await waitFor(async () => {
      await page.mouse.move(box.x, box.y);
      await page.mouse.move(box.x + 1, box.y);
      await page.waitForTimeout(700);
      return (await hover.count()) > 0 && (await hover.first().isVisible());
    }, "the mark's message on hover", 25_000, 300);
    const said = (await hover.first().textContent()) ?? "";
    for (const want of ["‘quixotic’ is unlikely here", "1 in 5,000", "the model's choice: ‘␣the’"]) {
      if (!said.includes(want)) throw new Error(`the hover lacks ${want}: ${said.slice(0, 300)}`);
    }
    await shot("14-scores");
    await page.mouse.move(5, 5);
    await page.keyboard.press("Escape");
    await runCommand("Loom: Score the Writer's Words");
    await waitFor(async () => (await squiggles()) === 0, "the mark gone when scoring is off", 20_000);
  });

  await check("Loom: Continue streams, ends with ✓ 3 continuations and leaves the tab clean", async () => {
    const statusBar = page.locator(".statusbar");
    await page.locator(".editor-group-container.active .monaco-editor .view-lines").first().click();
    await page.keyboard.press("Control+End");
    const before = await editorText();
    modelScript.push([words(" The door was open."), words(" Nobody answered."), words(" A dog barked somewhere.")]);
    await runCommand("Loom: Continue");
    await waitFor(async () => (await statusBar.textContent())?.includes("✓ 3 continuations"),
      "✓ 3 continuations in the status bar", 40_000);
    await waitFor(async () => (await editorText()) !== before, "the continuation in the text", 10_000);
    await waitFor(async () => (await page.locator(".tabs-container .tab.active.dirty").count()) === 0,
      "the tab to be clean after the generation", 10_000);
    const bar = (await statusBar.textContent()) ?? "";
    if (/generating/.test(bar)) throw new Error(`the status bar still says generating: ${bar.slice(0, 200)}`);
    await shot("8-continued");
  });

  await check("→ continue models:fake,second: a sibling from each model, hover names each one's model, and the status bar's model picker chooses the tree's model and its sampler preset", async () => {
    const statusBar = page.locator(".statusbar");
    const modelItem = page.locator(".statusbar-item", { hasText: /^\s*fake\s*$/ });
    await waitFor(async () => (await modelItem.count()) > 0, "the tree's model (fake) in the status bar", 15_000);
    modelScript.push([words(" A north wind rose.")], [words(" A south wind fell.")]);
    const asked = modelRequests.length;
    await page.locator(".editor-group-container.active .monaco-editor .view-lines").first().click();
    await page.keyboard.press("Control+End");
    await page.keyboard.press("Enter");
    await page.keyboard.type("→ continue models:fake,second n:1", { delay: 40 });
    await page.keyboard.press("Control+s");
    await waitFor(async () => {
      const text = await proseText();
      return !text.includes(squash("→ continue models")) && /northwindrose|southwindfell/.test(text);
    }, "a sibling of the two in the text, the → line gone", 40_000);
    const models = modelRequests.slice(asked).map((r) => r.model).sort().join(",");
    if (models !== "fake-base,second-base") throw new Error(`the requests asked ${models}`);
    const seen = new Set();
    for (let turn = 0; turn < 2; turn++) {
      const text = (await proseText()).includes(squash("north wind rose")) ? "north wind rose" : "south wind fell";
      const card = await hoverOn(text.split(" ")[0], /Generated/);
      const model = /Generated:(fake-base|second-base)/.exec(card)?.[1];
      if (!model || !card.includes("of2fromonerequest")) throw new Error(`the hover does not name the sibling's model: ${card.slice(0, 300)}`);
      seen.add(model);
      log(`hover on "${text}": ${model}`);
      if (turn === 0) await shot("8b-models-hover");
      await page.mouse.move(5, 5);
      await page.keyboard.press("Escape");
      if (turn === 0) {
        await page.locator(".editor-group-container.active .monaco-editor .view-lines").first().click();
        await page.keyboard.press("Control+End");
        const before = await proseText();
        await page.keyboard.press("Alt+BracketRight");
        await waitFor(async () => (await proseText()) !== before, "the other model's sibling", 10_000);
      }
    }
    if (seen.size !== 2) throw new Error(`both siblings' hovers named ${[...seen].join(", ")}`);
    // the picker: click the model in the status bar, choose "second"; continue asks it
    await modelItem.first().click();
    const input = page.locator(".quick-input-widget input");
    await input.waitFor({ state: "visible", timeout: 10_000 });
    await page.locator(".quick-input-widget .monaco-list-row", { hasText: "second-base" }).waitFor({ timeout: 10_000 });
    await shot("8c-model-picker");
    await input.fill("second");
    await page.waitForTimeout(300);
    await page.keyboard.press("Enter");
    await waitFor(async () => (await page.locator(".statusbar-item", { hasText: /^\s*second\s*$/ }).count()) > 0, "second in the status bar", 10_000);
    modelScript.push([words(" Then rain.")]);
    const next = modelRequests.length;
    await runCommand("Loom: Continue");
    await waitFor(() => modelRequests.length > next, "the next request", 20_000);
    if (modelRequests[next].model !== "second-base") throw new Error(`continue asked ${modelRequests[next].model}`);
    await waitFor(async () => (await statusBar.textContent())?.includes("✓"), "the continuation landed", 40_000);
    // back to the default, for the checks after this one
    await page.locator(".statusbar-item", { hasText: /^\s*second\s*$/ }).first().click();
    await input.waitFor({ state: "visible", timeout: 10_000 });
    await input.fill("fake");
    await page.waitForTimeout(300);
    await page.keyboard.press("Enter");
    await waitFor(async () => (await modelItem.count()) > 0, "fake in the status bar again", 10_000);
    // a sampler preset, picked in the same picker: continue samples with it in this tree
    await modelItem.first().click();
    await input.waitFor({ state: "visible", timeout: 10_000 });
    await page.locator(".quick-input-widget .monaco-list-row", { hasText: "preset: wild" }).waitFor({ timeout: 10_000 });
    await shot("8d-preset-picker");
    await input.fill("preset: wild");
    await page.waitForTimeout(300);
    await page.keyboard.press("Enter");
    const withPreset = page.locator(".statusbar-item", { hasText: /^\s*fake · wild\s*$/ });
    await waitFor(async () => (await withPreset.count()) > 0, "fake · wild in the status bar", 10_000);
    modelScript.push([words(" Then hail.")]);
    const hot = modelRequests.length;
    await runCommand("Loom: Continue");
    await waitFor(() => modelRequests.length > hot, "the preset's request", 20_000);
    const sent = modelRequests[hot];
    if (sent.top_k !== 100 || sent.temperature !== 1.3) throw new Error(`continue sent top_k ${sent.top_k}, temperature ${sent.temperature}`);
    await waitFor(async () => (await statusBar.textContent())?.includes("✓"), "the preset's continuation landed", 40_000);
    await withPreset.first().click();
    await input.waitFor({ state: "visible", timeout: 10_000 });
    await input.fill("no preset");
    await page.waitForTimeout(300);
    await page.keyboard.press("Enter");
    await waitFor(async () => (await modelItem.count()) > 0, "fake (no preset) in the status bar again", 10_000);
  });

  await check("Loom: Continue With Options… says what the options read as while they are typed, and asks the model with them", async () => {
    // (the Continue prompt read only n: and tokens:; now the server reads what is typed)
    const statusBar = page.locator(".statusbar");
    await page.locator(".editor-group-container.active .monaco-editor .view-lines").first().click();
    await page.keyboard.press("Control+End");
    modelScript.push([words(" The stairs creaked.")]);
    const asked = modelRequests.length;
    await runCommand("Loom: Continue With Options…");
    const input = page.locator(".quick-input-widget input");
    await waitFor(async () => ((await page.locator(".quick-input-widget").textContent()) ?? "").includes("Continue With Options"),
      "the options prompt", 10_000);
    const said = async () => (await page.locator(".quick-input-widget").textContent()) ?? "";
    await input.fill("n:1 bogus:1");
    await waitFor(async () => (await said()).includes('unknown option "bogus:" for continue'), "the ✗ under the input", 10_000);
    await input.fill("n:1 temprature:0.3 seed:5");
    await waitFor(async () => (await said()).includes("read as → continue n:1 temperature:0.3 seed:5"), "the typo's reading", 10_000);
    await shot("8d-continue-with-options");
    await page.keyboard.press("Enter");
    await waitFor(() => modelRequests.length > asked, "the request", 20_000);
    const r = modelRequests[asked];
    if (r.temperature !== 0.3 || r.seed !== 5 || (r.n ?? 1) !== 1) throw new Error(`continue asked ${JSON.stringify({ t: r.temperature, seed: r.seed, n: r.n })}`);
    await waitFor(async () => (await statusBar.textContent())?.includes("✓ 1 continuation"), "✓ 1 continuation", 40_000);
  });

  await check("→ continue and Ctrl+S: the tab is not shown unsaved while the generation streams in", async () => {
    // before: the tab had the dirty dot for the whole generation (~35 s) though nothing
    // was typed after the save: each streamed piece is an edit of the document
    const statusBar = page.locator(".statusbar");
    const before = await proseText();
    modelScript.push({ choices: [words(Array.from({ length: 60 }, (_, i) => ` wind${i}`).join("")), words(" Somewhere a door closed.")], delayMs: 60 });
    await page.locator(".editor-group-container.active .monaco-editor .view-lines").first().click();
    await page.keyboard.press("Control+End");
    await page.keyboard.press("Enter");
    await page.keyboard.type("→ continue n:2", { delay: 20 });
    await page.keyboard.press("Control+s");
    await waitFor(async () => (await proseText()).includes("wind3wind4"), "the generation streaming in", 30_000);
    // every change of the tab's dirty class from here on, timed (the stream goes on ~3 s)
    await page.evaluate(() => {
      const w = /** @type {any} */ (window);
      const tab = () => document.querySelector(".tabs-container .tab.active");
      let last = tab()?.classList.contains("dirty");
      w.__dirty = [[performance.now(), last]];
      w.__dirtyObserver = new MutationObserver(() => {
        const now = tab()?.classList.contains("dirty");
        if (now !== last) w.__dirty.push([performance.now(), (last = now)]);
      });
      w.__dirtyObserver.observe(document.querySelector(".tabs-container"), { attributes: true, subtree: true, attributeFilter: ["class"] });
    });
    await page.waitForTimeout(300);
    await shot("8b-streaming");
    await waitFor(async () => (await proseText()).includes("wind58wind59"), "the whole continuation in", 40_000);
    await waitFor(async () => !/generating/.test((await statusBar.textContent()) ?? ""), "the status bar to stop saying generating", 20_000);
    await waitFor(async () => (await page.locator(".tabs-container .tab.active.dirty").count()) === 0, "the tab clean after the generation", 10_000);
    // the streamed text's provisional marker (…) gives way to the landed node's
    await waitFor(async () => /¦›?[0-9a-z]+◀\d+\/\d+▶wind0/.test(await editorText()),
      "the landed node's marker before its text", 10_000);
    const changes = await page.evaluate(() => {
      const w = /** @type {any} */ (window);
      w.__dirtyObserver.disconnect();
      w.__dirty.push([performance.now(), null]);
      return w.__dirty;
    });
    // how long the tab showed "unsaved" while the text streamed in: each piece is an edit,
    // saved (quietly) as soon as it is in, so a flash per piece at most (longer when the
    // next piece overtakes the save)
    let longest = 0;
    let flashes = 0;
    let dirty = 0;
    for (let i = 0; i < changes.length - 1; i++) {
      if (changes[i][1] === true) {
        const ms = changes[i + 1][0] - changes[i][0];
        flashes++;
        dirty += ms;
        longest = Math.max(longest, ms);
      }
    }
    const span = changes.at(-1)[0] - changes[0][0];
    const streamed = (await proseText()).slice(before.length);
    log(`while streaming (${span.toFixed(0)} ms, ${streamed.length} characters in): ${flashes} dirty flash(es), `
      + `${dirty.toFixed(0)} ms in all, the longest ${longest.toFixed(0)} ms`);
    if (longest > 1500) throw new Error(`the tab showed "unsaved" ${dirty.toFixed(0)} ms of ${span.toFixed(0)} (at most ${longest.toFixed(0)} ms at a time) while the generation streamed in`);
  });

  await check("cancelling a generation is not an error and leaves the text as it was", async () => {
    const statusBar = page.locator(".statusbar");
    const before = await proseText();
    // slow enough to be cancelled while it streams
    modelScript.push({ choices: [words(Array.from({ length: 200 }, (_, i) => ` word${i}`).join(""))], delayMs: 150 });
    await runCommand("Loom: Continue");
    await waitFor(async () => (await proseText()) !== before, "the generation streaming in", 30_000);
    await runCommand("Loom: Cancel Generation");
    await waitFor(async () => (await statusBar.textContent())?.includes("generation cancelled"),
      "“generation cancelled” in the status bar", 30_000);
    try {
      await waitFor(async () => (await proseText()) === before, "the streamed text gone", 15_000);
    } catch (err) {
      const now = await proseText();
      let i = 0;
      while (i < now.length && now[i] === before[i]) i++;
      throw new Error(`${err.message}: before …${before.slice(Math.max(0, i - 40), i + 80)}… now …${now.slice(Math.max(0, i - 40), i + 80)}…`);
    }
    const toasts = await page.locator(".notifications-toasts .notification-toast").allTextContents();
    if (toasts.some((t) => /MODEL_ERROR|✗/.test(t))) throw new Error(`an error toast after cancelling: ${toasts.join(" | ")}`);
    await waitFor(async () => (await page.locator(".tabs-container .tab.active.dirty").count()) === 0,
      "the tab to be clean after cancelling", 10_000);
    await waitFor(async () => !/generating/.test((await statusBar.textContent()) ?? ""),
      "the status bar to stop saying generating", 10_000);
  });

  await check("→ explore: the collaborator grows the tree (judged, the weak branch pruned), the overview shows it, its notification's Cancel ends it with nothing half-written", async () => {
    const tipBefore = sql("SELECT p.tip FROM position p JOIN participant h ON h.id = p.participant WHERE h.name = 'human'")[0][0];
    // the nodes the exploration made: the continuations in the change log after its start
    const explorerNodes = () => sql("SELECT n.id, n.content, n.pruned, n.extra FROM change c JOIN node n ON n.id = c.entity "
      + "WHERE c.kind = 'node.continuation' AND c.seq > (SELECT min(seq) FROM change WHERE kind = 'explore.start') ORDER BY c.seq");
    if (sql("SELECT count(*) FROM change WHERE kind = 'explore.start'")[0][0] !== 0) throw new Error("an exploration before this one");
    const before = 0;
    // level 1: two branches, judged 8 and 2 (the 2 is pruned); level 2 (from the 8) is held
    // at its first token until the stop has run
    let release;
    const held = new Promise((r) => { release = r; });
    modelScript.push([words(" The lamp in the hall was still warm."), words(" Nothing moved.")],
      { choices: [words(" Someone had been here an hour ago."), words(" The stairs creaked.")], holdAt: 1, hold: held });
    judgeScript.push("8/10 — vivid, and it opens a door", "2/10 — nothing happens");
    const asked = modelRequests.length;
    try {
      await page.locator(".editor-group-container.active .monaco-editor .view-lines").first().click();
      await page.keyboard.press("Control+End");
      await page.keyboard.press("Enter");
      await page.keyboard.type('→ explore depth:2 n:2 budget:3000 judge:"vivid and consistent"', { delay: 20 });
      await page.keyboard.press("Control+s");
      await waitFor(async () => !(await proseText()).includes(squash("→ explore")), "the → explore line gone after the save", 15_000);
      // the tree grows: two branches of the writer's place, each judged, the weak one pruned
      const grown = await waitFor(() => {
        const made = explorerNodes().slice(before);
        return made.length === 2 && made.every((n) => JSON.parse(n[3] || "{}").judge) && made.some((n) => n[2]) && made;
      }, "the collaborator's two judged branches in the database, the weak one pruned", 30_000);
      const [lamp, nothing] = grown;
      const judged = Object.fromEntries(grown.map((n) => [n[1], JSON.parse(n[3]).judge]));
      if (judged[lamp[1]].score !== 8 || judged[nothing[1]].score !== 2 || lamp[2] !== 0 || nothing[2] !== 1) {
        throw new Error(`the judgements or prunes are not the judge's: ${JSON.stringify(grown)}`);
      }
      if (sql("SELECT parent FROM node WHERE id = ?", lamp[0])[0][0] !== tipBefore) throw new Error("the exploration did not start from the writer's place");
      await waitFor(() => modelRequests.length >= asked + 2, "the second level's continuation asked (and held)", 20_000);
      if (judgeRequests.length < 2) throw new Error(`the judge was asked ${judgeRequests.length} times`);
      // the overview shows the kept branch with its score; the pruned one has left it
      await runCommand("Loom: Open Tree Overview");
      const pick = page.locator(".quick-input-widget .monaco-list-row", { hasText: "The House at the End of the Lane" });
      if (await pick.first().isVisible({ timeout: 2_000 }).catch(() => false)) await pick.first().click();
      await waitFor(async () => (await editorText()).includes(squash("Tree:")), "the overview", 20_000);
      // found as a writer finds a line in a long overview (Ctrl+F): only the lines on screen are in the page
      await waitFor(async () => /^1 of 1$/.test(await findInEditor("8/10 (vivid, and it opens a door) › The lamp in the hall")), "the judged branch with its score in the overview", 20_000);
      await waitFor(async () => (await editorText()).includes(squash("8/10 (vivid, and it opens a door) › The lamp in the hall")), "the judged branch on screen", 5_000);
      const pruned = await findInEditor("Nothing moved.");
      if (pruned !== "No results") throw new Error(`the pruned branch is in the overview (${pruned})`);
      await shot("8d-exploring-overview");
      // back to the path document (its tab), the overview's tab closed
      await page.locator(".tabs-container .tab", { hasText: "The House at the End of the Lane" }).filter({ hasNotText: "(tree)" }).first().click();
      await waitFor(async () => !((await page.locator(".tabs-container .tab.active").textContent()) ?? "").includes("(tree)"), "back on the path document", 10_000);
      await page.locator(".tabs-container .tab", { hasText: "(tree)" }).first().click({ button: "middle" });
      await waitFor(async () => (await page.locator(".tabs-container .tab", { hasText: "(tree)" }).count()) === 0, "the overview's tab closed", 10_000);
      // its progress: a notification with the figures and a Cancel button (loom/exploring)
      const toast = page.locator(".notifications-toasts .notification-toast", { hasText: "Loom: exploring from [" });
      await waitFor(async () => /2 nodes · 2 scored · 1 pruned · [\d,]+\/3,000 tokens/.test((await toast.first().textContent().catch(() => "")) ?? ""),
        "the exploration's notification with its figures", 15_000);
      await shot("8d-exploring-notification");
      // the writer stops it with its Cancel: the held continuation is cancelled, nothing of it is stored
      await toast.first().locator(".monaco-button", { hasText: "Cancel" }).click();
      // the summary comes as a message
      const said = await waitFor(async () => {
        const toasts = (await page.locator(".notifications-toasts .notification-toast", { hasText: "stopped exploring from" }).allTextContents()).join(" ");
        return /stopped exploring from \[[0-9a-z]+\]: 2 nodes made, 2 scored, 1 pruned/.test(toasts) && toasts;
      }, "“stopped exploring … 2 nodes made, 2 scored, 1 pruned” as a message", 40_000);
      log(`stop: ${/stopped exploring[^·]*·[^)]*tokens/.exec(said)?.[0] ?? said.slice(0, 160)}`);
      await waitFor(async () => (await toast.count()) === 0, "the exploration's notification gone", 10_000);
      await waitFor(async () => (await page.locator(".tabs-container .tab.active.dirty").count()) === 0, "the tab clean after the stop", 10_000);
      await shot("8e-exploration-stopped");
    } finally {
      release();
    }
    await page.waitForTimeout(500);
    const after = explorerNodes().slice(before);
    if (after.length !== 2 || after.some((n) => /Someone had been|stairs creaked/.test(n[1]))) {
      throw new Error(`a node of the cancelled continuation was stored: ${JSON.stringify(after.map((n) => n[1]))}`);
    }
    const ends = sql("SELECT c.payload, p.name FROM change c JOIN participant p ON p.id = c.actor WHERE c.kind = 'explore.end'");
    const end = ends.length === 1 ? JSON.parse(ends[0][0]) : {};
    if (ends[0]?.[1] !== "collaborator" || end.made !== 2 || end.scored !== 2 || end.pruned !== 1) throw new Error(`the change log's explore.end: ${JSON.stringify(ends)}`);
    const prunedBy = sql("SELECT p.name FROM change c JOIN participant p ON p.id = c.actor WHERE c.kind = 'node.flags' AND c.entity = ?", after[1][0]).map((r) => r[0]);
    if (!prunedBy.includes("collaborator")) throw new Error(`the prune was not the collaborator's: ${JSON.stringify(prunedBy)}`);
    // the Cancel ran → explore end through the executor as the writer
    const stoppedBy = sql("SELECT p.name FROM trace_entry t JOIN participant p ON p.id = t.participant WHERE t.command = '→ explore end'").map((r) => r[0]);
    if (JSON.stringify(stoppedBy) !== JSON.stringify(["human"])) throw new Error(`the stop's trace: ${JSON.stringify(stoppedBy)}`);
    if (sql("SELECT count(*) FROM branch_lock l JOIN participant p ON p.id = l.participant WHERE p.name = 'collaborator'")[0][0] !== 0) {
      throw new Error("the collaborator left a branch lock held");
    }
  });

  await check("Loom: Explore from Here… asks the rubric and how far, and explores from the node at the cursor", async () => {
    // “Then rain.” on the writer's path
    const node = sql("WITH RECURSIVE up(id) AS (SELECT p.tip FROM position p JOIN participant h ON h.id = p.participant "
      + "WHERE h.name = 'human' UNION SELECT n.parent FROM node n JOIN up ON n.id = up.id WHERE n.parent IS NOT NULL) "
      + "SELECT n.id, n.local_id FROM node n JOIN up ON up.id = n.id WHERE n.content LIKE '%Then rain.%'")[0];
    if (!node) throw new Error("no “Then rain.” node");
    modelScript.push([words(" The gutters ran over.")]);
    judgeScript.push("7/10 — tense enough");
    const asked = judgeRequests.length;
    if (!/^1 of/.test(await findInEditor("Then rain."))) throw new Error("“Then rain.” not found in the path");
    // the cursor into the word (the find left it selected, the cursor at its end: the next node's start)
    for (const key of ["ArrowLeft", "ArrowRight", "ArrowRight"]) await page.keyboard.press(key);
    await runCommand("Loom: Explore from Here…");
    const input = page.locator(".quick-input-widget input");
    await waitFor(async () => ((await page.locator(".quick-input-widget").textContent()) ?? "").includes(`Explore from [${node[1]}] (1/2)`),
      `the rubric asked, from [${node[1]}]`, 10_000);
    await input.fill("tense, and true to the house");
    await page.keyboard.press("Enter");
    await waitFor(async () => (await input.inputValue()) === "depth:3 n:2 budget:20000 threshold:5", "how far asked, the defaults offered", 10_000);
    await shot("8f-explore-from-here");
    await input.fill("depth:1 n:1 budget:2000");
    await page.keyboard.press("Enter");
    const said = await waitFor(async () => {
      const toasts = (await page.locator(".notifications-toasts .notification-toast", { hasText: `explored from [${node[1]}]` }).allTextContents()).join(" ");
      return /1 made, 1 scored, 0 pruned/.test(toasts) && toasts;
    }, `“explored from [${node[1]}]: 1 made, 1 scored, 0 pruned” as a message`, 30_000);
    log(`explore from here: ${/✓ explored from [^)]*\)/.exec(said)?.[0] ?? said.slice(0, 160)}`);
    const made = sql("SELECT n.parent, n.content FROM change c JOIN node n ON n.id = c.entity WHERE c.kind = 'node.continuation' "
      + "AND c.seq > (SELECT max(seq) FROM change WHERE kind = 'explore.start')");
    if (made.length !== 1 || made[0][0] !== node[0] || made[0][1] !== " The gutters ran over.") throw new Error(`the exploration made ${JSON.stringify(made)}`);
    if (!JSON.stringify(judgeRequests.slice(asked)).includes("tense, and true to the house")) throw new Error("the judge was not given the rubric");
  });

  await check("suggestions dismissed with Escape, then one accepted with Tab, are in the preference log (loom export-preferences): shown, dismissed, shown, accepted", async () => {
    modelScript.push([words(" The kettle was cold."), words(" A clock ticked.")]);
    await page.locator(".editor-group-container.active .monaco-editor .view-lines").first().click();
    await page.keyboard.press("Control+End");
    const tipBefore = sql("SELECT p.tip FROM position p JOIN participant h ON h.id = p.participant WHERE h.name = 'human'")[0][0];
    await runCommand("Loom: Suggest Continuations");
    await waitFor(async () => (await ghostText()).trim().length > 0, "a suggestion as ghost text", 30_000);
    // Escape dismisses them (Loom's own binding: VS Code reports no dismissal)
    const dismissals = () => sql("SELECT count(*) FROM preference_event WHERE kind = 'suggestion_dismissed' AND parent = ?", tipBefore)[0][0];
    const dismissedBefore = dismissals();
    await page.keyboard.press("Escape");
    await waitFor(async () => (await ghostText()).trim() === "", "the ghost text gone after Escape", 5_000);
    await waitFor(() => dismissals() === dismissedBefore + 1, "the dismissal in the preference log", 5_000);
    // offered again (the path's continuations, whenever the cursor is at the end)
    await runCommand("Trigger Inline Suggestion");
    const ghost = await waitFor(async () => {
      const g = (await ghostText()).trim();
      return g.length > 0 && g;
    }, "the suggestions offered again", 15_000);
    await shot("9c-suggestion-to-accept");
    await page.keyboard.press("Tab");
    const taken = await waitFor(() => {
      const [id, content] = sql("SELECT n.id, n.content FROM position p JOIN participant h ON h.id = p.participant "
        + "JOIN node n ON n.id = p.tip WHERE h.name = 'human'")[0];
      return id !== tipBefore && [id, content];
    }, "Tab: the suggestion as the path's end", 10_000);
    if (squash(taken[1]) !== squash(ghost)) throw new Error(`accepted "${taken[1]}", the ghost text was "${ghost}"`);
    await waitFor(async () => (await page.locator(".tabs-container .tab.active.dirty").count()) === 0, "the tab clean after the accept", 10_000);
    await shot("9d-suggestion-accepted");
    const human = sql("SELECT id FROM participant WHERE name = 'human'")[0][0];
    const exported = (format) => {
      const r = spawnSync(LOOM, ["--db", DB, "export-preferences", "--format", format], { encoding: "utf8", env: ENV });
      if (r.status !== 0) throw new Error(`loom export-preferences --format ${format} failed: ${r.stderr}`);
      return r.stdout.split("\n").filter((l) => l.trim()).map((l) => JSON.parse(l));
    };
    const events = exported("jsonl").filter((e) => e.participant === human || e.participant === "human");
    const accepted = events.find((e) => e.kind === "suggestion_accepted" && e.chosen === taken[0]);
    // the showing the accept ended: the last one of these suggestions before it
    const shown = events.filter((e) => e.kind === "suggestion_shown" && e.parent === tipBefore && e.shown.includes(taken[0])
      && (!accepted || e.id < accepted.id)).at(-1);
    if (!shown || !accepted) throw new Error(`the export lacks the showing or the accept: ${JSON.stringify(events.slice(-4))}`);
    const dismissed = events.find((e) => e.kind === "suggestion_dismissed" && e.parent === tipBefore && e.id < accepted.id);
    if (!dismissed || dismissed.detail?.how !== "dismissed" || dismissed.shown.length < 1 || dismissed.chosen) {
      throw new Error(`the export lacks the Escape's dismissal: ${JSON.stringify(events.slice(-6))}`);
    }
    if (JSON.stringify(shown.shown) !== JSON.stringify(accepted.shown)) throw new Error(`shown ${JSON.stringify(shown.shown)}, the accept says ${JSON.stringify(accepted.shown)}`);
    if (accepted.detail?.how !== "whole" || accepted.shown.length < 2 || accepted.rejected.includes(taken[0])) {
      throw new Error(`the accept's event: ${JSON.stringify(accepted)}`);
    }
    if (events.some((e) => e.kind === "suggestion_dismissed" && e.parent === tipBefore && e.id > shown.id)) {
      throw new Error("an accepted suggestion was logged as dismissed");
    }
    const pairs = exported("dpo").filter((p) => p.chosen === taken[1]);
    if (pairs.length < 1 || pairs.some((p) => p.rejected === taken[1] || !p.prompt)) throw new Error(`the DPO pairs of the accept: ${JSON.stringify(pairs)}`);
    log(`export: suggestion_dismissed [${dismissed.shown.length}], suggestion_shown [${shown.shown.length}], suggestion_accepted (slot ${accepted.detail.slot}); ${pairs.length} DPO pair(s) with chosen "${taken[1]}"`);
  });

  await check("model text is readable on a light theme (contrast ≥ 4.5:1)", async () => {
    // Preferences: Color Theme → Light Modern, as a user switches
    await page.locator(".editor-group-container.active .monaco-editor .view-lines").first().click();
    await page.keyboard.press("Control+k");
    await page.keyboard.press("Control+t"); // workbench.action.selectTheme
    const input = page.locator(".quick-input-widget input");
    await input.waitFor({ state: "visible", timeout: 10_000 });
    await input.fill("Light Modern");
    await page.locator(".quick-input-widget .monaco-list-row", { hasText: /Light Modern/ }).first().click();
    const light = async () => page.locator(".editor-group-container.active .monaco-editor-background").first().evaluate((el) => {
      const [r, g, b] = (getComputedStyle(el).backgroundColor.match(/\d+/g) ?? ["0", "0", "0"]).map(Number);
      return (r + g + b) / 3 > 200;
    });
    await waitFor(light, "the light theme on the editor", 15_000);
    await page.waitForTimeout(500);
    const span = page.locator(".editor-group-container.active .view-lines span span", { hasText: "door was open" }).last();
    await span.waitFor({ timeout: 10_000 });
    const ratio = await span.evaluate((el) => {
      const rgb = (c) => (c.match(/\d+(\.\d+)?/g) ?? []).slice(0, 3).map(Number);
      const lum = ([r, g, b]) => {
        const f = (v) => { const s = v / 255; return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4; };
        return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
      };
      const bg = getComputedStyle(document.querySelector(".editor-group-container.active .monaco-editor-background") ?? document.body).backgroundColor;
      const a = lum(rgb(getComputedStyle(el).color));
      const b = lum(rgb(bg));
      return (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
    });
    log(`model text contrast on Light Modern: ${ratio.toFixed(2)}:1`);
    await shot("prose-light-theme");
    if (ratio < 4.5) throw new Error(`model text contrast ${ratio.toFixed(2)}:1 on a light theme`);
  });

  await check("closing the tab during a generation: the continuation lands and a message says so", async () => {
    // runs on while its tab is closed: the model holds after 20 words until the tab is gone
    let release;
    const hold = new Promise((r) => { release = r; });
    modelScript.push({ choices: [words(Array.from({ length: 300 }, (_, i) => ` word${i}`).join(""))], delayMs: 20, holdAt: 20, hold });
    const pathTabs = async () => (await page.locator(".tabs-container .tab").allTextContents())
      .map((t) => t.trim()).filter((t) => t.includes("The House at the End of the Lane") && !t.includes("(tree)"));
    try {
      await page.locator(".editor-group-container.active .monaco-editor .view-lines").first().click();
      await page.keyboard.press("Control+End");
      await runCommand("Loom: Continue");
      // every streamed word in (an edit landing while VS Code reverts would veto the close)
      await waitFor(async () => (await proseText()).includes("word17word18"), "the generation streaming in", 30_000);
      await page.locator(".tabs-container .tab.active .tab-actions .action-label").first().click();
      // the streamed text is Loom's, not the user's: the tab closes without asking to save
      // (should VS Code ask, an edit landing just then, the user does not save)
      const dialog = page.locator(".monaco-dialog-box");
      if (await dialog.waitFor({ timeout: 1_500 }).then(() => true, () => false)) {
        log("closing the tab asked to save (an edit was landing)");
        await dialog.locator(".monaco-button", { hasText: /Don.t Save/ }).click();
      }
      await waitFor(async () => (await pathTabs()).length === 0, "the tab closed", 10_000);
    } finally {
      release();
    }
    // the extension tells the server the last tab of the document closed (loom/tabClosed);
    // the server says where the continuation went once it has landed
    await waitFor(async () => (await page.locator(".notifications-toasts .notification-toast", { hasText: "its tab was closed" }).count()) > 0,
      "the message that the continuation landed", 40_000);
    const tree = /^(\S+)\s/m.exec(spawnSync(LOOM, ["--db", DB, "trees"], { encoding: "utf8" }).stdout)?.[1];
    const found = spawnSync(LOOM, ["--db", DB, "search", "word150", "--tree", tree], { encoding: "utf8" }).stdout;
    if (!/✓ [1-9]\d* match/.test(found)) throw new Error(`the generation is not in the tree: ${found}`);
    // past the generation's end (its final edit, its "clean"): the closed tab stays closed
    await waitFor(async () => !/generating/.test((await page.locator(".statusbar").textContent()) ?? ""),
      "the status bar to stop saying generating", 15_000);
    for (let i = 0; i < 12; i++) {
      await page.waitForTimeout(250);
      const open = await pathTabs();
      if (open.length) {
        await shot("14-tab-closed");
        throw new Error(`the closed path's tab came back: ${open.join(" | ")}`);
      }
    }
    log(`tabs after the close: ${(await page.locator(".tabs-container .tab").allTextContents()).map((t) => t.trim()).join(" | ") || "(none)"}`);
    await shot("14-tab-closed");
    // the same document again (its URI, which VS Code may have kept open without a tab):
    // it shows the tree as it is now, the continuation on the path, and is not dirty
    await runCommand("View: Reopen Closed Editor");
    await waitFor(async () => (await pathTabs()).length === 1, "the path's tab again", 15_000);
    await page.locator(".editor-group-container.active .monaco-editor .view-lines").first().click();
    await page.keyboard.press("Control+End");
    // (once in CI the text came a moment after 15 s, on a machine loaded by the run)
    await waitForProse("word297word298word299", "the continuation in the reopened document", 40_000);
    if ((await page.locator(".tabs-container .tab.active.dirty").count()) !== 0) throw new Error("the reopened document is dirty");
    await shot("15-reopened");
    await page.locator(".tabs-container .tab.active .tab-actions .action-label").first().click();
    await waitFor(async () => (await pathTabs()).length === 0, "the reopened tab closed", 10_000);
    // open the path again (the Loom view's current node)
    await page.locator(".notifications-toasts .notification-toast .codicon-notifications-clear, .notifications-toasts .notification-toast .codicon-close").first().click().catch(() => {});
    const current = page.locator(".monaco-list-row:has(.codicon-circle-filled)").first();
    await current.waitFor({ timeout: 20_000 });
    await current.click();
    await waitFor(async () => (await editorText()).includes(squash("The house stood empty")), "the path again", 20_000);
    // the human's position moved to the continuation: its path shows it too
    await page.locator(".editor-group-container.active .monaco-editor .view-lines").first().click();
    await page.keyboard.press("Control+End");
    await waitForProse("word297word298word299", "the continuation on the current path", 15_000);
    // back to the start of the text (the generation left the view at its end)
    await page.locator(".editor-group-container.active .monaco-editor .view-lines").first().click();
    await page.keyboard.press("Control+Home");
  });

  await check("bookmark a node, find it with Go to Symbol, search every tree, delete a subtree after asking", async () => {
    await clickOnText("door was open");
    await runCommand("Loom: Bookmark Node");
    const input = page.locator(".quick-input-widget input");
    await page.locator(".quick-input-widget", { hasText: "Bookmark label" }).waitFor({ timeout: 10_000 });
    await input.fill("the open door");
    await page.keyboard.press("Enter");
    await waitFor(async () => (await page.locator(".statusbar").textContent())?.includes("✓ bookmarked"), "✓ bookmarked", 15_000);
    // Go to Symbol in Workspace (workspace/symbol): the bookmark, by its label
    await page.keyboard.press("Control+t");
    await input.waitFor({ state: "visible", timeout: 10_000 });
    await input.fill("#open door");
    await waitFor(async () => (await page.locator(".quick-input-widget .monaco-list-row", { hasText: "★ the open door" }).count()) > 0,
      "the bookmark among the workspace symbols", 15_000);
    await page.keyboard.press("Escape");
    // Loom: Search Every Tree, as you type; the hit opens its path
    await runCommand("Loom: Search Every Tree");
    // (its placeholder, an attribute: "hasText" matched the palette's own row while it faded)
    await page.locator('.quick-input-widget input[placeholder^="Search every tree"]').waitFor({ timeout: 10_000 });
    await input.fill("walnut leaves");
    const hit = page.locator(".quick-input-widget .monaco-list-row", { hasText: "walnut" }).first();
    await hit.waitFor({ timeout: 15_000 });
    await shot("search");
    await hit.click();
    await waitFor(async () => (await editorText()).includes(squash("the walnut trees had dropped")), "the hit's path", 20_000);
    // delete the walnut subtree: a modal asks first. The hit's path may still be taking its
    // markers when the click lands (it once landed at 1:1, on the root): click until the
    // cursor is in the walnut text
    const cursor = page.locator(".statusbar-item", { hasText: /Ln \d+, Col \d+/ });
    await waitFor(async () => {
      await clickOnText("walnut trees had dropped");
      await page.waitForTimeout(300);
      return Number(/Col (\d+)/.exec((await cursor.first().textContent()) ?? "")?.[1] ?? 0) > 90; // past "…mother's death,", the root's text
    }, "the cursor in the walnut text", 15_000, 500);
    await runCommand("Loom: Delete Node and Its Subtree…");
    const dialog = page.locator(".monaco-dialog-box");
    await dialog.waitFor({ timeout: 10_000 });
    if (!/30 days/.test((await dialog.textContent()) ?? "")) throw new Error("the dialog does not say how to undo");
    await dialog.locator(".monaco-button", { hasText: /^Delete$/ }).click();
    await waitFor(async () => !(await editorText()).includes(squash("the walnut trees had dropped")), "the subtree gone from the text", 20_000);
    await waitFor(async () => (await page.locator(".tabs-container .tab.active.dirty").count()) === 0, "a clean tab", 10_000);
  });

  await check("tag and prune from the command palette: each says what it did, and nothing about commits", async () => {
    const statusBar = page.locator(".statusbar");
    await page.locator(".editor-group-container.active .view-lines").click();
    await page.keyboard.press("Control+End");
    await runCommand("Loom: Tag Node");
    await page.locator(".quick-input-widget", { hasText: "Tags" }).waitFor({ timeout: 10_000 });
    await page.locator(".quick-input-widget input").fill("mood");
    await page.keyboard.press("Enter");
    await waitFor(async () => (await statusBar.textContent())?.includes("✓ tagged"), "✓ tagged", 15_000);
    // prune the path's last node: the view leaves it, the status bar says so (it said
    // "✓ nothing to commit": a save after the re-render overwrote the prune's answer)
    const before = await proseText();
    await page.keyboard.press("Control+End");
    await runCommand("Loom: Prune Node (Hide Its Subtree)");
    const said = [];
    const until = Date.now() + 4_000;
    while (Date.now() < until) {
      said.push((await statusBar.textContent()) ?? "");
      await page.waitForTimeout(100);
    }
    await shot("pruned");
    if (!said.some((t) => t.includes("✓ pruned"))) throw new Error(`no ✓ pruned in the status bar: ${[...new Set(said)].join(" | ")}`);
    const noise = said.filter((t) => t.includes("nothing to commit"));
    if (noise.length) throw new Error(`the status bar said: ${noise[0]}`);
    if ((await proseText()) === before) throw new Error("the pruned node is still in the text");
    await waitFor(async () => (await page.locator(".tabs-container .tab.active.dirty").count()) === 0, "a clean tab", 10_000);
  });

  await check("Loom: Open Tree Overview shows the read-only tree drawing", async () => {
    await runCommand("Loom: Open Tree Overview");
    // the active document's tree; a pick only without one
    const pick = page.locator(".quick-input-widget .monaco-list-row", { hasText: "The House at the End of the Lane" });
    if (await pick.first().isVisible({ timeout: 2_000 }).catch(() => false)) await pick.first().click();
    await waitFor(async () => (await editorText()).includes(squash('Tree: "The House at the End of the Lane"')), "the overview in the editor", 20_000);
    const before = await editorText();
    if (!/\[[0-9a-z]{3,}\]\*/.test(before)) throw new Error("the overview does not mark the position with *");
    // for people: each node's text beside its id, the path marked, branches foldable
    if (!/●\[[0-9a-z]{3,}\]›andthewindowsseemed/.test(before)) throw new Error(`the overview shows no text beside the ids: ${before.slice(0, 300)}`);
    const tab = (await page.locator(".tabs-container .tab.active").textContent()) ?? "";
    if (!tab.includes("The House at the End of the Lane (tree)")) throw new Error(`the overview's tab: "${tab}"`);
    await waitFor(async () => (await page.locator(".editor-group-container.active .margin-view-overlays .codicon-folding-expanded, .editor-group-container.active .margin-view-overlays .codicon-chevron-down").count()) > 0,
      "fold controls on the overview's branches", 10_000);
    await page.locator(".editor-group-container.active .monaco-editor .view-lines").first().click();
    await page.keyboard.type("xyz");
    await page.waitForTimeout(500);
    if ((await editorText()) !== before) throw new Error("the overview is not read-only: typing changed it");
    await shot("6-overview");
  });

  await check("Loom: Tree Picture draws the tree; clicking a node opens its path", async () => {
    await runCommand("View: Close All Editors");
    await runCommand("Loom: Tree Picture");
    // no Loom editor is active: it asks which tree
    const pick = page.locator(".quick-input-widget .monaco-list-row", { hasText: "The House at the End of the Lane" });
    await pick.first().waitFor({ timeout: 15_000 });
    await pick.first().click();
    // the webview's page is a frame inside frames: find the one holding the picture
    const frame = await waitFor(async () => {
      for (const f of page.frames()) {
        const n = await f.locator("g.node").count().catch(() => 0);
        if (n >= 10) return f;
      }
      return undefined;
    }, "the picture's nodes", 30_000, 500);
    await page.waitForTimeout(500);
    await shot("tree-picture");
    // a node off the current path: its <title> holds its text
    const key = frame.locator("g.node", { has: frame.locator("title", { hasText: "key still hung" }) }).first();
    await key.locator("circle").click();
    await waitFor(async () => (await editorText()).includes(squash("though the key still hung")), "the clicked node's path", 20_000);
    // close the picture and give the workbench the keyboard back (a webview keeps it)
    await page.locator(".editor-group-container .monaco-editor .view-lines").first().click();
    await runCommand("View: Close All Editors");
  });

  await check("Loom: New Tree creates a tree and opens its path document", async () => {
    await runCommand("Loom: New Tree");
    const input = page.locator(".quick-input-widget input");
    await page.locator(".quick-input-widget", { hasText: "Title of the new tree" }).waitFor({ timeout: 10_000 });
    await input.fill("An e2e tree");
    await page.keyboard.press("Enter");
    await page.locator(".quick-input-widget .monaco-list-row", { hasText: "dialogue" }).waitFor({ timeout: 10_000 });
    await input.fill("buffer");
    await page.keyboard.press("Enter");
    await page.locator(".quick-input-widget", { hasText: "The root's text" }).waitFor({ timeout: 10_000 });
    await input.fill("Once upon a time, a loom.");
    await page.keyboard.press("Enter");
    await waitFor(async () => (await editorText()).includes(squash("Once upon a time, a loom.")), "the new tree's text in the editor", 20_000);
    await page.locator(".monaco-list-row", { hasText: "An e2e tree" }).first().waitFor({ timeout: 15_000 });
    const trees = spawnSync(LOOM, ["--db", DB, "trees"], { encoding: "utf8" }).stdout;
    if (!trees.includes("An e2e tree")) throw new Error(`loom trees does not list the new tree:\n${trees}`);
    await shot("7-new-tree");
  });

  await check("an imported socketteer tree opens on its selected node, with its text and a word on why", async () => {
    // before: the 764-node file opened on the root's empty first child, an empty document
    const fixture = resolve(dirname(new URL(import.meta.url).pathname), "..", "..", "..", "shared", "fixtures", "socketteer-loom-demo.json");
    if (!existsSync(fixture)) {
      log(`no fixture at ${fixture}: skipped`);
      return;
    }
    const imported = spawnSync(LOOM, ["--db", DB, "import", fixture], { encoding: "utf8" });
    if (imported.status !== 0) throw new Error(`loom import failed: ${imported.stdout}${imported.stderr}`);
    // the palette's row for exactly "Loom: Open Tree" (Enter would take a recently used
    // "Loom: Open Tree Overview")
    await page.keyboard.press("F1");
    await page.locator(".quick-input-widget input").fill(">Loom: Open Tree");
    await page.waitForTimeout(400);
    const rows = page.locator(".quick-input-widget .monaco-list-row");
    let row = -1;
    for (let i = 0; i < await rows.count() && row < 0; i++) {
      if (/Loom: Open Tree(?! Overview)/.test((await rows.nth(i).textContent()) ?? "")) row = i;
    }
    if (row < 0) throw new Error("no Loom: Open Tree in the palette");
    await rows.nth(row).click();
    const pick = page.locator(".quick-input-widget .monaco-list-row", { hasText: "socketteer" });
    await pick.first().waitFor({ timeout: 15_000 });
    await pick.first().click();
    await waitFor(async () => (await proseText()).length > 200, "the imported path's text", 30_000);
    const tab = (await page.locator(".tabs-container .tab.active").textContent()) ?? "";
    if (!tab.includes("socketteer")) throw new Error(`the tab does not name the imported tree: "${tab}"`);
    // the selected node has no text: its boundary says so
    await waitFor(async () => (await editorText()).includes("(notext)"), "the “(no text)” hint at the selected node", 15_000);
    await shot("imported");
  });

  await check("a tree made from the terminal shows in the Loom view without Refresh", async () => {
    // before: the view stayed stale until Refresh
    const made = spawnSync(LOOM, ["--db", DB, "new", "Written in a terminal", "--text", "It begins."], { encoding: "utf8" });
    if (made.status !== 0) throw new Error(`loom new failed: ${made.stdout}${made.stderr}`);
    await page.locator(".monaco-list-row", { hasText: "Written in a terminal" }).first().waitFor({ timeout: 20_000 })
      .catch(() => { throw new Error("the new tree is not in the Loom view"); });
    await shot("15b-tree-from-terminal");
  });

  await check("Loom: Doctor says which model serves what and times the local model in its own process", async () => {
    await runCommand("Loom: Doctor: Check the Models");
    // the whole report as VS Code logs the output channel (the panel shows only what fits)
    const logged = () => channelLogs(/Loom Doctor/).at(-1) ?? "";
    const panel = page.locator(".part.panel .monaco-editor .view-lines");
    const report = async () => logged() || ((await panel.first().textContent().catch(() => "")) ?? "").replace(/\u00a0/g, " ");
    const required = process.env.LOOM_REQUIRE_LOCAL_MODEL === "1";
    await waitFor(async () => /generation: \d+ tokens in \d+ ms|server: not set up/.test(await report()),
      "the doctor's report in the Loom Doctor output", 90_000);
    const text = await report();
    if (!/subject: fake \(openai-compatible: fake-base/.test(text)) throw new Error(`the report names no subject: ${text.slice(0, 300)}`);
    if (required && !/generation: \d+ tokens in \d+ ms/.test(text)) throw new Error(`no generation timed: ${text.slice(0, 600)}`);
    if (!/language server memory: \d+ MB/.test(text)) throw new Error(`no memory figure: ${text.slice(0, 600)}`);
    await shot("14-doctor");
  });

  await check("a .loom file on disk opens as Loom, the server takes it without an error and completes its command lines", async () => {
    writeFileSync(join(FOLDER, "notes.loom"), "Notes kept on disk.\n→ view a7x2\n");
    const errorsBefore = (loomLog().match(/\[error\]|Request .* failed/gi) ?? []).length;
    const toasts = async () => ((await page.locator(".notifications-toasts").textContent().catch(() => "")) ?? "");
    const toastsBefore = await toasts();
    await page.keyboard.press("Control+P");
    const input = page.locator(".quick-input-widget input");
    await input.waitFor({ state: "visible", timeout: 10_000 });
    await input.fill("notes.loom");
    await page.waitForTimeout(600);
    await page.keyboard.press("Enter");
    await waitFor(async () => (await editorText()).includes(squash("Notes kept on disk.")), "the file's text", 15_000);
    await waitFor(async () => /Loom/.test((await page.locator("#status\\.editor\\.mode").textContent().catch(() => "")) ?? ""),
      "the language mode Loom", 15_000);
    await languageStatusItem(); // the running server's item shows over files on disk too
    await page.keyboard.press("Escape");
    // its command lines complete as in a loom: buffer: typed at a person's speed, the
    // tree's node ids are offered after → view
    await page.locator(".editor-group-container.active .monaco-editor .view-lines").first().click();
    await page.keyboard.press("Control+End");
    await page.keyboard.type("→ view ", { delay: 80 });
    const widget = page.locator(".editor-widget.suggest-widget.visible");
    await widget.waitFor({ timeout: 15_000 });
    await waitFor(async () => (await widget.locator(".monaco-list-row .label-name").allTextContents())
      .some((l) => /^[0-9a-z]{6}$/.test(l.trim())), "the tree's node ids among the suggestions", 10_000);
    await shot("16b-loom-file-completion");
    await page.keyboard.press("Escape");
    await page.waitForTimeout(1_500); // the server's answers to the file's didOpen and first requests
    const toastsAfter = await toasts();
    if (toastsAfter !== toastsBefore && /error|failed|not running|version/i.test(toastsAfter)) {
      throw new Error(`a notification after opening the file: ${toastsAfter.slice(0, 300)}`);
    }
    const failed = loomLog().split("\n").filter((l) => /\[error\]|Request .* failed/i.test(l));
    const errors = failed.length - errorsBefore;
    if (errors > 0) throw new Error(`the Loom log has ${errors} new error(s):\n${failed.slice(-errors).join("\n")}`);
    await shot("16-loom-file-on-disk");
  });

  await check("a server of another version: a warning names both versions and what to install; the status item warns", async () => {
    // a loom that says it is 0.0.9 (and serves as the real one): loom.server.path changes,
    // the extension restarts the server and runs the handshake again
    const old = join(WORK, "old-loom");
    writeFileSync(old, `#!/bin/sh\nif [ "$1" = "--version" ]; then echo "loom 0.0.9 (Python 3, ${WORK})"; exit 0; fi\nexec "${LOOM}" "$@"\n`, { mode: 0o755 });
    writeFileSync(join(USER_DATA, "Machine", "settings.json"), JSON.stringify({ "loom.server.path": old, "loom.database": DB }, null, 2));
    const toast = page.locator(".notifications-toasts .notification-toast", { hasText: "The Loom server is 0.0.9" });
    await toast.first().waitFor({ timeout: 30_000 }).catch(() => { throw new Error("no warning about the server's version"); });
    const text = ((await toast.first().textContent()) ?? "").replace(/\u00a0/g, " ");
    if (!/this extension is \d+\.\d+\.\d+/.test(text) || !/loom-lsp==\d+\.\d+\.\*/.test(text)) throw new Error(`the warning does not say what to install: ${text.slice(0, 300)}`);
    await shot("17-version-mismatch");
    const item = page.locator(".hover-language-status", { hasText: "server 0.0.9, extension" }).first();
    await waitFor(async () => {
      await page.mouse.move(5, 5);
      await page.locator("#status\\.languageStatus").hover();
      return item.isVisible({ timeout: 2_000 });
    }, "the version warning in the language status item", 20_000, 500);
    await shot("17b-version-mismatch-status");
    writeFileSync(join(USER_DATA, "Machine", "settings.json"), JSON.stringify({ "loom.server.path": LOOM, "loom.database": DB }, null, 2));
  });

  if (consoleErrors.length) log(`browser console errors (not failures): ${consoleErrors.slice(0, 5).join(" | ").slice(0, 600)}`);
} catch (err) {
  failed = true;
  const file = await shot(`failure-${step.replace(/[^a-z0-9]+/gi, "-").slice(0, 60)}`);
  console.error(`✗ ${step}: ${err instanceof Error ? err.message : String(err)}`);
  if (file) console.error(`  screenshot: ${file}`);
  console.error("── code-server output (tail) ──\n" + serverOut.split("\n").slice(-40).join("\n"));
  console.error(extensionLogs());
} finally {
  try { await browserContext?.close(); } catch { /* closing */ }
  cleanup();
}

for (const r of results) console.log(r);
const total = results.length + (failed ? 1 : 0);
console.log(`vscode-e2e: ${results.length} passed, ${failed ? 1 : 0} failed`);
log(`${total} checks`);
process.exit(failed ? 1 : 0);
