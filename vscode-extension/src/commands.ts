/**
 * The palette commands (`loom.ui.*`). The server's own commands (`loom.continue`, …) are
 * registered client-side by the language client for code lenses; these wrap them with the
 * arguments taken from the editor: its URI, the node under the cursor, the cursor's line.
 */

import * as path from "node:path";
import * as vscode from "vscode";
import {
  annotateArgs,
  branchArgs,
  commandLineAt,
  continueArgs,
  continueGiven,
  fillArgs,
  fillCount,
  cycleArgs,
  dialogueAnchors,
  EXPORT_FORMATS,
  exportBytes,
  exportNotes,
  nodeAt,
  nodeIdInLabel,
  optionsCheck,
  runArgs,
  type Anchor,
} from "./args";
import type { LoomClient } from "./client";
import {
  Methods,
  ServerCommands,
  type DoctorResult,
  type ExportFormat,
  type ExportResult,
  type ImportResult,
  type NewTreeResult,
  type NodeInfo,
  type SearchHit,
  type TreeSummary,
} from "./protocol";
import { TreePicture } from "./picture";
import { ShownSuggestion } from "./shownSuggestion";
import { siblingItems, siblingPreview, type Sibling, type SiblingPage } from "./siblingModel";
import { SiblingPreview } from "./siblingPreview";
import type { LoomTreeProvider } from "./treeView";
import { OPEN_NODE_COMMAND } from "./treeView";
import { parseLoomUri, SCHEME, treeOf, treeUri } from "./uris";

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function cursorOf(ed: vscode.TextEditor): { line: number; character: number } {
  return { line: ed.selection.active.line, character: ed.selection.active.character };
}

function loomEditor(): vscode.TextEditor {
  const ed = vscode.window.activeTextEditor;
  if (!ed || ed.document.uri.scheme !== SCHEME) throw new Error("Open a Loom document first (Loom: Open Tree).");
  return ed;
}

function pathEditor(): vscode.TextEditor {
  const ed = loomEditor();
  if (parseLoomUri(ed.document.uri.toString())?.kind !== "path") throw new Error("This works in a path document (loom://path/…).");
  return ed;
}

/** A server reply that is a `✗ …` result (a string or `{ok: false, text|message}`). */
function failure(result: unknown): string | undefined {
  if (typeof result === "string") return result.trimStart().startsWith("✗") ? result : undefined;
  if (result && typeof result === "object") {
    const r = result as { ok?: boolean; text?: string; message?: string };
    if (r.ok === false) return r.text ?? r.message ?? "✗ failed";
  }
  return undefined;
}

async function lensAnchors(uri: vscode.Uri, commands: readonly string[]): Promise<Anchor[]> {
  const lenses = (await vscode.commands.executeCommand<vscode.CodeLens[] | undefined>("vscode.executeCodeLensProvider", uri)) ?? [];
  const anchors: Anchor[] = [];
  for (const l of lenses) {
    const cmd = l.command;
    if (!cmd || !commands.includes(cmd.command)) continue;
    const arg = (cmd.arguments ?? [])[0] as { node?: string } | undefined;
    if (arg?.node) anchors.push({ pos: { line: l.range.start.line, character: l.range.start.character }, node: arg.node });
  }
  return anchors;
}

async function hintAnchors(doc: vscode.TextDocument): Promise<Anchor[]> {
  const range = new vscode.Range(0, 0, doc.lineCount, 0);
  const hints = (await vscode.commands.executeCommand<vscode.InlayHint[] | undefined>("vscode.executeInlayHintProvider", doc.uri, range)) ?? [];
  const anchors: Anchor[] = [];
  for (const h of hints) {
    const label = typeof h.label === "string" ? h.label : h.label.map((p) => p.value).join("");
    const tooltip = typeof h.tooltip === "string" ? h.tooltip : (h.tooltip?.value ?? "");
    const node = nodeIdInLabel(tooltip) ?? nodeIdInLabel(label);
    if (node) anchors.push({ pos: { line: h.position.line, character: h.position.character }, node });
  }
  return anchors;
}

export class Commands {
  /** uri → the inline suggestion VS Code shows there (see ShownSuggestion). */
  private readonly suggestions = new Map<string, ShownSuggestion>();

  constructor(
    private readonly client: LoomClient,
    private readonly view: LoomTreeProvider,
  ) {}

  private shownSuggestion(uri: vscode.Uri): ShownSuggestion {
    const key = uri.toString();
    let s = this.suggestions.get(key);
    if (!s) {
      s = new ShownSuggestion();
      this.suggestions.set(key, s);
    }
    return s;
  }

  register(context: vscode.ExtensionContext): void {
    const reg = (id: string, fn: (...args: unknown[]) => Promise<unknown>): void => {
      context.subscriptions.push(
        vscode.commands.registerCommand(id, async (...args: unknown[]) => {
          try {
            return await fn(...args);
          } catch (err) {
            void vscode.window.showErrorMessage(`Loom: ${message(err)}`);
            return undefined;
          }
        }),
      );
    };
    reg("loom.ui.newTree", () => this.newTree());
    reg("loom.ui.openTree", (arg) => this.openTree(arg));
    reg("loom.ui.openOverview", (arg) => this.openOverview(arg));
    reg("loom.ui.import", () => this.importFile());
    reg("loom.ui.export", (arg) => this.exportTree(arg));
    reg("loom.ui.continue", (arg) => this.continue_(arg));
    reg("loom.ui.continueWith", (arg) => this.continueWith(arg));
    reg("loom.ui.fillSelection", (arg) => this.fillSelection(arg));
    reg("loom.ui.branch", () => this.branch());
    reg("loom.ui.nextSibling", () => this.cycle(1));
    reg("loom.ui.previousSibling", () => this.cycle(-1));
    reg("loom.ui.annotate", (arg) => this.annotate(arg));
    reg("loom.ui.run", () => this.run());
    reg("loom.ui.commit", () => this.commit());
    reg("loom.ui.cancel", () => this.cancel());
    reg("loom.ui.suggest", (arg) => this.suggest(arg));
    reg("loom.ui.explore", (arg) => this.explore(arg));
    reg("loom.ui.stopExploring", () => this.stopExploring());
    reg("loom.ui.toggleProbabilities", () => this.toggleProbabilities());
    reg("loom.ui.alternatives", () => this.alternatives());
    reg("loom.ui.toggleScores", () => this.toggleScores());
    reg("loom.ui.acceptSuggestionWord", () => this.acceptPart("editor.action.inlineSuggest.acceptNextWord"));
    reg("loom.ui.acceptSuggestionLine", () => this.acceptPart("editor.action.inlineSuggest.acceptNextLine"));
    reg("loom.ui.nextSuggestion", () => this.cycleSuggestion(1));
    reg("loom.ui.previousSuggestion", () => this.cycleSuggestion(-1));
    reg("loom.ui.hideSuggestion", () => this.hideSuggestion());
    context.subscriptions.push(
      this.preview,
      this.client.onInlineItems((e) => {
        this.shownSuggestion(vscode.Uri.parse(e.uri, true)).provided(e.items, e.version);
      }),
      vscode.workspace.onDidCloseTextDocument((doc) => {
        this.suggestions.delete(doc.uri.toString());
      }),
    );
    reg("loom.ui.refresh", () => {
      this.view.refresh();
      return Promise.resolve();
    });
    reg("loom.ui.restartServer", () => this.client.restart());
    reg("loom.ui.doctor", () => this.doctor());
    reg("loom.ui.siblings", () => this.siblingsAtCursor());
    reg("loom.ui.bookmark", (arg) => this.bookmark(arg));
    reg("loom.ui.unbookmark", (arg) => this.act("unbookmark", arg));
    reg("loom.ui.tag", (arg) => this.tag(arg));
    reg("loom.ui.rate", (arg) => this.rate(arg));
    reg("loom.ui.prune", (arg) => this.act("prune", arg));
    reg("loom.ui.deleteSubtree", (arg) => this.deleteSubtree(arg));
    reg("loom.ui.renameTree", (arg) => this.renameTree(arg));
    reg("loom.ui.deleteTree", (arg) => this.deleteTree(arg));
    reg("loom.ui.search", () => this.search());
    reg("loom.ui.treePicture", (arg) => this.treePicture(arg));
    reg("loom.ui.compareSiblings", () => this.compareAtCursor());
    // the inlay hint's "k/n" and the lenses ask the server for loom.siblings: pick here
    this.client.localCommands.set(ServerCommands.siblings, async (args) => {
      const a = (args[0] ?? {}) as { uri?: string; node?: string };
      if (a.uri && a.node) await this.pickSibling(a.uri, a.node);
      return undefined;
    });
    reg(OPEN_NODE_COMMAND, (uri) => this.openUri(String(uri)));
  }

  async openUri(uri: string, column?: vscode.ViewColumn): Promise<vscode.TextEditor> {
    const doc = await vscode.workspace.openTextDocument(vscode.Uri.parse(uri, true));
    return vscode.window.showTextDocument(doc, { preview: false, viewColumn: column });
  }

  /**
   * The node under the cursor: asked of the server (`loom/nodeInfo` with the position), else
   * found from the lenses and inlay hints it puts at node starts.
   */
  async nodeUnderCursor(ed: vscode.TextEditor): Promise<string> {
    const uri = ed.document.uri.toString();
    const cursor = { line: ed.selection.active.line, character: ed.selection.active.character };
    const tree = treeOf(uri);
    if (tree) {
      try {
        const info = await this.client.request<NodeInfo>(Methods.nodeInfo, { tree, uri, ...cursor });
        if (info.node.localId) return info.node.localId;
      } catch (err) {
        this.client.log.appendLine(`loom/nodeInfo at the cursor: ${message(err)}`);
      }
    }
    const anchors = [
      ...dialogueAnchors(ed.document.getText()),
      ...(await lensAnchors(ed.document.uri, [ServerCommands.branch, ServerCommands.annotate, ServerCommands.cycleSibling])),
      ...(await hintAnchors(ed.document).catch(() => [])),
    ];
    const node = nodeAt(anchors, cursor);
    if (node) return node;
    const target = parseLoomUri(uri);
    if (target?.kind === "path") return target.node;
    throw new Error("no node under the cursor");
  }

  /** Run a server command; `{ok: false, message}` is an error, a success message is shown briefly. */
  private async execute(command: string, args: object): Promise<void> {
    const r = await this.client.execute(command, args);
    const f = failure(r);
    if (f) throw new Error(f);
    const m = r && typeof r === "object" ? (r as { message?: unknown }).message : undefined;
    if (typeof m === "string" && m) vscode.window.setStatusBarMessage(`Loom: ${m.split("\n")[0]}`, 5000);
  }

  private async pickTree(placeHolder: string): Promise<TreeSummary | undefined> {
    const trees = await this.client.request<TreeSummary[]>(Methods.trees, {});
    if (trees.length === 0) throw new Error("no trees yet (Loom: New Tree, Loom: Import)");
    const pick = await vscode.window.showQuickPick(
      trees.map((t) => ({ label: t.title, description: `${t.mode} · ${t.nodes} nodes`, detail: t.id, tree: t })),
      { placeHolder, matchOnDescription: true, matchOnDetail: true },
    );
    return pick?.tree;
  }

  async newTree(): Promise<void> {
    const title = await vscode.window.showInputBox({ prompt: "Title of the new tree", placeHolder: "The House at the End of the Lane" });
    if (!title) return;
    const mode = await vscode.window.showQuickPick(
      [
        { label: "buffer", description: "one continuous text; nodes are spans of it" },
        { label: "dialogue", description: "one block per node, headed [id] author · time" },
      ],
      { placeHolder: "Mode" },
    );
    if (!mode) return;
    const text = await vscode.window.showInputBox({ prompt: "The root's text (optional)" });
    const params: { title: string; mode: string; text?: string } = { title, mode: mode.label };
    if (text) params.text = text;
    const r = await this.client.request<NewTreeResult>(Methods.newTree, params);
    this.view.refresh();
    await this.openUri(r.uri);
  }

  async openTree(arg?: unknown): Promise<void> {
    let tree: string | undefined;
    if (typeof arg === "string") tree = arg;
    else if (arg && typeof arg === "object" && "tree" in arg) tree = String(arg.tree);
    tree ??= (await this.pickTree("Open which tree?"))?.id;
    if (!tree) return;
    const known = (await this.client.request<TreeSummary[]>(Methods.trees, {})).find((t) => t.id === tree);
    if (known?.pathUri) {
      await this.openUri(known.pathUri);
      return;
    }
    const info = await this.client.request<NodeInfo>(Methods.nodeInfo, { tree });
    await this.openUri(info.node.uri);
  }

  /** The tree overview (read-only): from a view item, the active document's tree, or a pick. */
  async openOverview(arg?: unknown): Promise<void> {
    let tree: string | undefined;
    if (arg && typeof arg === "object" && "tree" in arg) tree = String(arg.tree);
    const active = vscode.window.activeTextEditor?.document.uri;
    if (!tree && active?.scheme === SCHEME) tree = treeOf(active.toString());
    tree ??= (await this.pickTree("Overview of which tree?"))?.id;
    if (!tree) return;
    // the server's URI for it ends with the title: the tab is named after the tree
    const known = (await this.client.request<TreeSummary[]>(Methods.trees, {})).find((t) => t.id === tree);
    await this.openUri(known?.uri ?? treeUri(tree));
  }

  async importFile(): Promise<void> {
    const files = await vscode.window.showOpenDialog({
      canSelectMany: false,
      openLabel: "Import",
      filters: { "Loom trees": ["json", "md", "loom"], "All files": ["*"] },
    });
    if (!files || files.length === 0) return;
    // The extension reads the file the user picked and sends its text: the server reads
    // files only inside the workspace folder.
    const content = new TextDecoder().decode(await vscode.workspace.fs.readFile(files[0]));
    const r = await this.client.request<ImportResult>(Methods.import, { content, name: path.basename(files[0].fsPath) });
    if (r.ok === false) {
      void vscode.window.showErrorMessage(`Loom: ${r.message ?? "import failed"}`);
      return;
    }
    this.view.refresh();
    const names = r.trees.map((t) => t.title).join(", ");
    void vscode.window.showInformationMessage(`Loom: imported ${r.trees.length} tree${r.trees.length === 1 ? "" : "s"}: ${names}`);
    // at the file's current (selected) node, not on the overview
    if (r.trees.length > 0) await this.openUri(r.trees[0].pathUri ?? r.trees[0].uri);
  }

  async exportTree(arg?: unknown): Promise<void> {
    let tree: string | undefined;
    if (arg && typeof arg === "object" && "tree" in arg) tree = String(arg.tree);
    const active = vscode.window.activeTextEditor?.document.uri;
    if (!tree && active?.scheme === SCHEME) tree = treeOf(active.toString());
    tree ??= (await this.pickTree("Export which tree?"))?.id;
    if (!tree) return;
    const format = await vscode.window.showQuickPick(
      EXPORT_FORMATS as { label: ExportFormat; description: string; ext: string }[],
      { placeHolder: "Format" },
    );
    if (!format) return;
    const folder = vscode.workspace.workspaceFolders?.[0]?.uri;
    const target = await vscode.window.showSaveDialog({
      saveLabel: "Export",
      defaultUri: folder ? vscode.Uri.joinPath(folder, `${tree}.${format.ext}`) : undefined,
      filters: { [format.label]: [format.ext] },
    });
    if (!target) return;
    // The server returns the text; the extension writes where the save dialog said (the
    // server writes files only inside the workspace folder).
    const r = await this.client.request<ExportResult>(Methods.export, { tree, format: format.label });
    const bytes = exportBytes(r);
    if (r.ok === false || bytes === undefined) {
      void vscode.window.showErrorMessage(`Loom: ${r.message ?? "export failed"}`);
      return;
    }
    await vscode.workspace.fs.writeFile(target, bytes);
    // what the other loom cannot hold, said
    const notes = exportNotes(r.message);
    void vscode.window.showInformationMessage(
      `Loom: exported to ${path.basename(target.fsPath)}` + (notes ? ` (${notes})` : ""));
  }

  async continue_(arg?: unknown): Promise<void> {
    const ed = pathEditor();
    await this.execute(ServerCommands.continue, continueArgs(ed.document.uri.toString(), continueGiven(arg)));
  }

  /** The options typed last in Continue With Options…, offered again. */
  private lastContinueOptions = "";

  /**
   * Continue with any of `→ continue`'s options, typed as after `→ continue` in the buffer.
   * The server reads them (`loom/continueOptions` says what they read as while they are
   * typed, or the ✗ they would get); the extension knows no option's name.
   */
  async continueWith(arg?: unknown): Promise<void> {
    const ed = pathEditor();
    const uri = ed.document.uri.toString();
    let options = typeof arg === "string" ? arg : undefined;
    if (options === undefined) {
      options = await vscode.window.showInputBox({
        title: "Loom: Continue With Options",
        prompt: "→ continue's options, as you would type them after → continue",
        placeHolder: "n:2 temperature:0.7 top_p:0.9 seed:42 models:a,b",
        value: this.lastContinueOptions,
        ignoreFocusOut: true,
        validateInput: (typed) => this.checkContinueOptions(typed),
      });
      if (options === undefined) return;
      this.lastContinueOptions = options;
    }
    await this.execute(ServerCommands.continue, continueArgs(uri, { options }));
  }

  private async checkContinueOptions(typed: string): Promise<vscode.InputBoxValidationMessage | undefined> {
    let said;
    try {
      said = optionsCheck(await this.client.request(Methods.continueOptions, { options: typed }));
    } catch (err) { // (a ✗ answer is thrown with its text)
      said = optionsCheck({ ok: false, message: message(err) });
    }
    if (!said) return undefined;
    return {
      message: said.message,
      severity: said.severity === "error" ? vscode.InputBoxValidationSeverity.Error : vscode.InputBoxValidationSeverity.Info,
    };
  }

  /** Loom: Fill Selection…: n model-written alternatives for the selected span (within
   * one node), the text around it kept; the first streams in its place, the others are
   * versions of the node in the sibling picker. */
  async fillSelection(arg?: unknown): Promise<void> {
    const ed = pathEditor();
    const sel = ed.selection;
    if (sel.isEmpty) throw new Error("select the words to fill first");
    const given = (arg && typeof arg === "object" ? arg : {}) as { n?: number };
    let n = given.n;
    if (n === undefined) {
      const typed = await vscode.window.showInputBox({
        prompt: "How many alternatives for the selection?", value: "3",
        validateInput: (v) => (typeof fillCount(v) === "string" ? (fillCount(v) as string) : undefined),
      });
      if (typed === undefined) return;
      n = fillCount(typed) as number;
    }
    const args = fillArgs(ed.document.uri.toString(), sel.start, sel.end, n);
    await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: `Loom: filling the selection (${n})…`, cancellable: true },
      async (_progress, token) => {
        token.onCancellationRequested(() => void this.client.execute(ServerCommands.cancel, {}));
        await this.execute(ServerCommands.fill, args);
      },
    );
  }

  async branch(): Promise<void> {
    const ed = pathEditor();
    const node = await this.nodeUnderCursor(ed);
    await this.execute(ServerCommands.branch, { ...branchArgs(ed.document.uri.toString(), node), ...cursorOf(ed) });
  }

  /** Cycle the branch point at or before the cursor (the nearest "◀ k/n ▶" lens above it). */
  async cycle(delta: 1 | -1): Promise<void> {
    const ed = pathEditor();
    const anchors = await lensAnchors(ed.document.uri, [ServerCommands.cycleSibling]);
    if (anchors.length === 0) throw new Error("no node on this path has siblings");
    const cursor = { line: ed.selection.active.line, character: ed.selection.active.character };
    const node = nodeAt(anchors, cursor) ?? anchors[0].node;
    const r = await this.client.execute<{ message?: string; data?: { range?: vscode.Range } }>(
      ServerCommands.cycleSibling,
      cycleArgs(ed.document.uri.toString(), node, delta),
    );
    const f = failure(r);
    if (f) throw new Error(f);
    if (r?.message) vscode.window.setStatusBarMessage(`Loom: ${r.message.split("\n")[0]}`, 5000);
    // the cursor stays in the node switched to, so the next cycle cycles it again
    const range = r?.data?.range;
    if (range && vscode.window.activeTextEditor === ed) {
      const start = new vscode.Position(range.start.line, range.start.character);
      const end = new vscode.Position(range.end.line, range.end.character);
      if (!new vscode.Range(start, end).contains(ed.selection.active)) {
        ed.selection = new vscode.Selection(start, start);
      }
    }
  }

  /** A page of a node's siblings (the server answers 100 at a time: `offset`, `limit`). */
  private async siblingsOf(uri: string, node: string, offset = 0, limit?: number): Promise<SiblingPage> {
    const r = await this.client.execute<{ ok?: boolean; message?: string; data?: Partial<SiblingPage> }>(ServerCommands.siblings, {
      uri,
      node,
      ...(offset ? { offset } : {}),
      ...(limit ? { limit } : {}),
    });
    const f = failure(r);
    if (f) throw new Error(f);
    const siblings = r.data?.siblings ?? [];
    const here = siblings.find((s) => s.current);
    return {
      siblings,
      total: r.data?.total ?? siblings.length,
      next: r.data?.next ?? null,
      currentIndex: r.data?.currentIndex ?? here?.index ?? null,
    };
  }

  private readonly preview = new SiblingPreview();

  /**
   * Every sibling of a node, to show one instead: the picker lists them (place, author,
   * marks, a line of text) and a preview below the editor shows the whole text of the one
   * it is on; Enter switches to it, Escape leaves the view as it was.
   */
  async pickSibling(uri: string, node: string): Promise<void> {
    const first = await this.siblingsOf(uri, node);
    const siblings = [...first.siblings];
    let next = first.next;
    // the one shown, when it is beyond the first page: asked for by itself
    const here = siblings.find((s) => s.current) ?? (first.currentIndex ? (await this.siblingsOf(uri, node, first.currentIndex - 1, 1)).siblings[0] : undefined);
    const origin = vscode.window.activeTextEditor?.document.uri.toString() === uri ? vscode.window.activeTextEditor : undefined;
    const view = origin && { selection: origin.selection, visible: origin.visibleRanges[0], column: origin.viewColumn };
    const compare: vscode.QuickInputButton = { iconPath: new vscode.ThemeIcon("diff"), tooltip: "Compare with the one shown" };
    const qp = vscode.window.createQuickPick<vscode.QuickPickItem & { sibling?: Sibling }>();
    qp.title = `Siblings of [${here?.label ?? node}]`;
    qp.placeholder = "Pick one to show it in place of the current one (its whole text below)";
    qp.matchOnDetail = true;
    // a click in the preview (to scroll it) leaves the picker open
    qp.ignoreFocusOut = true;
    type Item = vscode.QuickPickItem & { sibling?: Sibling };
    // a long family comes a page at a time: the last item loads the next page
    const moreItem = (): Item[] =>
      next === null ? [] : [{ label: `$(ellipsis) ${(first.total - next).toLocaleString("en-US")} more…`, description: `load ${next + 1}–${Math.min(next + 100, first.total)} of ${first.total}`, alwaysShow: true }];
    const itemsOf = (list: Sibling[]): Item[] => siblingItems(list).map((i) => ({ ...i, buttons: i.sibling.current ? [] : [compare] }));
    qp.items = [...itemsOf(siblings), ...moreItem()];
    const previewUri = this.preview.newUri(qp.title);
    let after: (() => Promise<void>) | undefined;
    const done = new Promise<void>((resolve) => {
      qp.onDidChangeActive((active) => {
        const s = active[0]?.sibling;
        if (s) this.preview.update(previewUri, siblingPreview(s, here));
      });
      qp.onDidTriggerItemButton((e) => {
        const other = e.item.sibling;
        after = here && other ? () => this.compare(here, other) : undefined;
        qp.hide();
      });
      qp.onDidAccept(() => {
        const pick = qp.selectedItems[0];
        if (pick && !pick.sibling && next !== null) {
          qp.busy = true;
          void this.siblingsOf(uri, node, next).then(
            (page) => {
              siblings.push(...page.siblings);
              next = page.next;
              const items = [...itemsOf(siblings), ...moreItem()];
              qp.items = items;
              qp.activeItems = [items[siblings.length - page.siblings.length] ?? items[0]];
              qp.busy = false;
            },
            (err: unknown) => {
              qp.busy = false;
              this.client.log.appendLine(`loom.siblings, the next page: ${message(err)}`);
            },
          );
          return;
        }
        if (pick?.sibling && !pick.sibling.current) {
          const target = pick.sibling.id;
          after = () => this.execute(ServerCommands.switchTo, { uri, node: target }).then(() => {
            this.view.refreshSoon(50);
          });
        }
        qp.hide();
      });
      qp.onDidHide(() => {
        qp.dispose();
        resolve();
      });
    });
    const current = qp.items.find((i) => i.sibling?.current);
    if (current) qp.activeItems = [current];
    const shown = current?.sibling ?? siblings[0];
    if (shown) {
      try {
        await this.preview.open(previewUri, siblingPreview(shown, here), origin);
      } catch (err) {
        this.client.log.appendLine(`the sibling preview: ${message(err)}`);
      }
    }
    qp.show();
    await done;
    await this.preview.close(previewUri);
    // the editor as it was: focused, the cursor and the scroll where they were
    if (origin && view && !origin.document.isClosed) {
      const ed = await vscode.window.showTextDocument(origin.document, { viewColumn: view.column, selection: view.selection, preserveFocus: false });
      if (view.visible) ed.revealRange(view.visible, vscode.TextEditorRevealType.AtTop);
    }
    if (after) await after();
  }

  async siblingsAtCursor(): Promise<void> {
    const ed = pathEditor();
    await this.pickSibling(ed.document.uri.toString(), await this.nodeUnderCursor(ed));
  }

  /** Two siblings' paths in VS Code's diff editor. */
  async compare(left: Sibling, right: Sibling): Promise<void> {
    await vscode.commands.executeCommand("vscode.diff", vscode.Uri.parse(left.uri, true), vscode.Uri.parse(right.uri, true),
      `[${left.label}] ↔ [${right.label}]`, { preview: true });
  }

  /** The node under the cursor against its next sibling. */
  async compareAtCursor(): Promise<void> {
    const ed = pathEditor();
    const uri = ed.document.uri.toString();
    const node = await this.nodeUnderCursor(ed);
    const page = await this.siblingsOf(uri, node);
    const k = page.currentIndex; // 1-based, among them all (the page may not hold it)
    if (!k || page.total < 2) throw new Error("this node has no siblings to compare with");
    const at = async (i: number): Promise<Sibling | undefined> =>
      page.siblings.find((s) => s.index === i + 1) ?? (await this.siblingsOf(uri, node, i, 1)).siblings[0];
    const [here, other] = [await at(k - 1), await at(k % page.total)];
    if (!here || !other) throw new Error("this node has no siblings to compare with");
    await this.compare(here, other);
  }

  /** The node an action is about: a Loom view item's, else the one under the cursor. */
  private async target(arg?: unknown): Promise<{ uri: string; node: string; tree?: string }> {
    const item = arg as { node?: { localId?: string; uri?: string }; tree?: string } | undefined;
    if (item?.node?.localId && item.node.uri) return { uri: item.node.uri, node: item.node.localId, tree: item.tree };
    const ed = pathEditor();
    return { uri: ed.document.uri.toString(), node: await this.nodeUnderCursor(ed) };
  }

  /** One of the reader's actions through the server (`loom.act`, the arrow command). */
  async act(action: string, arg?: unknown, value?: string): Promise<void> {
    const t = await this.target(arg);
    await this.execute(ServerCommands.act, { uri: t.uri, node: t.node, action, value });
    this.view.refreshSoon(50);
  }

  async bookmark(arg?: unknown): Promise<void> {
    const label = await vscode.window.showInputBox({ prompt: "Bookmark label (optional)", placeHolder: "tone shift" });
    if (label === undefined) return;
    await this.act("bookmark", arg, label || undefined);
  }

  async tag(arg?: unknown): Promise<void> {
    const tags = await vscode.window.showInputBox({ prompt: "Tags (space or comma separated)", placeHolder: "dream, draft" });
    if (!tags) return;
    await this.act("tag", arg, tags);
  }

  async rate(arg?: unknown): Promise<void> {
    const pick = await vscode.window.showQuickPick(
      [
        { label: "$(thumbsup) +1", description: "good", value: "1" },
        { label: "$(thumbsdown) -1", description: "bad", value: "-1" },
        { label: "$(circle-slash) 0", description: "clear the rating", value: "0" },
      ],
      { placeHolder: "Rate the node" },
    );
    if (pick) await this.act("rate", arg, pick.value);
  }

  /** Asks first: the node and everything below it go (undelete within 30 days). */
  async deleteSubtree(arg?: unknown): Promise<void> {
    const t = await this.target(arg);
    const yes = "Delete";
    const answer = await vscode.window.showWarningMessage(
      `Delete [${t.node}] and everything below it?`,
      { modal: true, detail: `You can bring it back with → undelete ${t.node} for 30 days.` },
      yes,
    );
    if (answer !== yes) return;
    await this.execute(ServerCommands.act, { uri: t.uri, node: t.node, action: "delete" });
    this.view.refreshSoon(50);
  }

  private async treeTarget(arg?: unknown): Promise<{ tree: string; title: string; uri: string }> {
    const item = arg as { tree?: string; label?: string } | undefined;
    const trees = await this.client.request<TreeSummary[]>(Methods.trees, {});
    let id = item?.tree;
    const active = vscode.window.activeTextEditor?.document.uri;
    if (!id && active?.scheme === SCHEME) id = treeOf(active.toString());
    id ??= (await this.pickTree("Which tree?"))?.id;
    const t = trees.find((x) => x.id === id);
    if (!t) throw new Error("no tree");
    return { tree: t.id, title: t.title, uri: active?.scheme === SCHEME ? active.toString() : t.uri };
  }

  async renameTree(arg?: unknown): Promise<void> {
    const t = await this.treeTarget(arg);
    const title = await vscode.window.showInputBox({ prompt: `Rename "${t.title}"`, value: t.title });
    if (!title || title === t.title) return;
    await this.execute(ServerCommands.act, { uri: t.uri, tree: t.tree, action: "rename", value: title });
    this.view.refresh();
  }

  async deleteTree(arg?: unknown): Promise<void> {
    const t = await this.treeTarget(arg);
    const yes = "Delete Tree";
    const answer = await vscode.window.showWarningMessage(
      `Delete the tree "${t.title}"?`,
      { modal: true, detail: `You can bring it back with → undelete tree:"${t.title}" for 30 days.` },
      yes,
    );
    if (answer !== yes) return;
    await this.execute(ServerCommands.act, { uri: t.uri, tree: t.tree, action: "deleteTree" });
    this.view.refresh();
  }

  private pictureView: TreePicture | undefined;

  /** The tree as a picture (a webview): clicking a node opens its path. */
  async treePicture(arg?: unknown): Promise<void> {
    const item = arg as { tree?: string } | undefined;
    const active = vscode.window.activeTextEditor?.document.uri;
    let tree = item?.tree;
    if (!tree && active?.scheme === SCHEME) tree = treeOf(active.toString());
    tree ??= (await this.pickTree("Picture of which tree?"))?.id;
    if (!tree) return;
    this.pictureView ??= new TreePicture(this.client, (uri) => this.openUri(uri, vscode.ViewColumn.One));
    await this.pictureView.show(tree, active?.scheme === SCHEME ? active.toString() : undefined);
  }

  private doctorOutput: vscode.OutputChannel | undefined;

  /** `loom doctor` through the server: which model serves each purpose, whether the local
   * model starts here and how fast it is; shown in the "Loom Doctor" output. */
  async doctor(): Promise<void> {
    const result = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: "Loom: checking the models…" },
      () => this.client.request<DoctorResult>(Methods.doctor, { generate: true }),
    );
    this.doctorOutput ??= vscode.window.createOutputChannel("Loom Doctor");
    this.doctorOutput.replace(result.text ?? "");
    this.doctorOutput.show(true);
    const problems = (result.checks ?? []).filter((c) => c.status === "error");
    if (problems.length > 0) {
      const first = problems[0];
      void vscode.window.showWarningMessage(`Loom: ✗ ${first.text}${first.hint ? ` (${first.hint})` : ""}`);
    }
  }

  /** Full-text search over every tree, as you type; a hit opens its path. */
  async search(): Promise<void> {
    const qp = vscode.window.createQuickPick<vscode.QuickPickItem & { hit?: SearchHit }>();
    qp.placeholder = "Search every tree (every word; the last may be the start of one)";
    qp.matchOnDescription = true;
    qp.matchOnDetail = true;
    let asked = 0;
    const run = async (query: string): Promise<void> => {
      const mine = ++asked;
      if (query.trim().length < 2) {
        qp.items = [];
        return;
      }
      qp.busy = true;
      try {
        const r = await this.client.execute<{ ok?: boolean; data?: { hits?: SearchHit[] } }>(ServerCommands.search, { query });
        if (mine !== asked) return;
        qp.items = (r.data?.hits ?? []).map((h) => ({
          label: `[${h.label}] ${h.snippet.replace(/[«»]/g, "")}`,
          description: `${h.treeTitle}${h.marks ? " · " + h.marks : ""}`,
          detail: h.excerpt,
          alwaysShow: true,
          hit: h,
        }));
      } finally {
        if (mine === asked) qp.busy = false;
      }
    };
    qp.onDidChangeValue((v) => {
      void run(v);
    });
    const done = new Promise<void>((resolve) => {
      qp.onDidAccept(() => {
        const hit = qp.selectedItems[0]?.hit;
        qp.hide();
        if (hit) void this.openUri(hit.uri);
      });
      qp.onDidHide(() => {
        qp.dispose();
        resolve();
      });
    });
    qp.show();
    await done;
  }

  async annotate(arg?: unknown): Promise<void> {
    const ed = pathEditor();
    const node = await this.nodeUnderCursor(ed);
    let text = typeof arg === "string" ? arg : undefined;
    text ??= await vscode.window.showInputBox({ prompt: `Annotate [${node}]`, placeHolder: "this is where the tone shifts" });
    if (!text) return;
    await this.execute(ServerCommands.annotate, annotateArgs(ed.document.uri.toString(), node, text));
    this.view.refreshSoon();
  }

  async run(): Promise<void> {
    const ed = loomEditor();
    const lines = ed.document.getText().split(/\r?\n/);
    const line = commandLineAt(lines, ed.selection.active.line);
    if (line === undefined) throw new Error("no arrow command (→ …) on or above the cursor's line");
    await this.execute(ServerCommands.run, runArgs(ed.document.uri.toString(), line));
  }

  /**
   * n continuations of the path's end, kept as suggestions: the cursor goes to the end of
   * the document and VS Code shows them as ghost text (Alt+]/Alt+[ cycle, Tab accepts).
   */
  async suggest(arg?: unknown): Promise<void> {
    const ed = pathEditor();
    await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Window, title: "Loom: generating suggestions" },
      () => this.execute(ServerCommands.suggest, continueArgs(ed.document.uri.toString(), continueGiven(arg))),
    );
    const doc = ed.document;
    const end = doc.lineAt(doc.lineCount - 1).range.end;
    ed.selection = new vscode.Selection(end, end);
    ed.revealRange(new vscode.Range(end, end));
    await vscode.commands.executeCommand("editor.action.inlineSuggest.trigger");
  }

  /**
   * Let the collaborator explore from the node at the cursor: the judge's rubric and how far
   * (→ explore's options as typed, checked by the server), then `loom.explore`. Its progress
   * shows as a notification with Cancel (`exploring.ts`). An argument (a string) is taken as
   * the options and nothing is asked.
   */
  async explore(arg?: unknown): Promise<void> {
    const ed = pathEditor();
    const node = await this.nodeUnderCursor(ed);
    let options = typeof arg === "string" ? arg : undefined;
    if (options === undefined) {
      const judge = await vscode.window.showInputBox({
        title: `Loom: Explore from [${node}] (1/2)`,
        prompt: "What makes a good branch? The collaborator's model scores each new branch 0–10 against it (empty: its default rubric).",
        placeHolder: "vivid, and consistent with what came before",
        ignoreFocusOut: true,
      });
      if (judge === undefined) return;
      const how = await vscode.window.showInputBox({
        title: `Loom: Explore from [${node}] (2/2)`,
        prompt: "How far: levels (depth 1–6), branches a node (n 1–5), tokens it may spend, and the score below which a branch is pruned.",
        value: "depth:3 n:2 budget:20000 threshold:5",
        ignoreFocusOut: true,
        validateInput: (v) => (/["→]/.test(v) ? "options only (the rubric was asked before)" : undefined),
      });
      if (how === undefined) return;
      const rubric = judge.trim().replace(/"/g, "'");
      options = `${how.trim()}${rubric ? ` judge:"${rubric}"` : ""}`;
    }
    await this.execute(ServerCommands.explore, { uri: ed.document.uri.toString(), node, options });
    this.view.refreshSoon();
  }

  /** Stop the exploration of the active document's tree, wherever it runs. */
  async stopExploring(): Promise<void> {
    const ed = loomEditor();
    await this.execute(ServerCommands.stopExploring, { uri: ed.document.uri.toString() });
  }

  /** The probability colours on or off: the `loom.probabilities` setting, which the server follows. */
  async toggleProbabilities(): Promise<void> {
    const c = vscode.workspace.getConfiguration("loom");
    const on = !c.get<boolean>("probabilities", false);
    await c.update("probabilities", on, vscode.ConfigurationTarget.Global);
    vscode.window.setStatusBarMessage(`Loom: token probabilities ${on ? "shown (hover a token for its alternatives)" : "hidden"}`, 4000);
  }

  /** Whether the probability colours were turned on for the scores (and go off with them). */
  private coloursForScores = false;

  /**
   * Score the writer's words on or off (`loom.toggleScores`): the server scores the path's
   * text no model has scored yet, and marks its least likely spans (Information diagnostics
   * whose quick fix branches there with the model's choice). The probability colours come on
   * with it (the `loom.probabilities` setting, which the server follows), and go off with it
   * when they were off before.
   */
  async toggleScores(): Promise<void> {
    const ed = pathEditor();
    const r = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Window, title: "Loom: scoring the writer's words" },
      () => this.client.execute(ServerCommands.toggleScores, { uri: ed.document.uri.toString() }),
    );
    const f = failure(r);
    if (f) throw new Error(f);
    const res = (r ?? {}) as { message?: string; data?: { on?: boolean } };
    const c = vscode.workspace.getConfiguration("loom");
    if (res.data?.on && !c.get<boolean>("probabilities", false)) {
      this.coloursForScores = true;
      await c.update("probabilities", true, vscode.ConfigurationTarget.Global);
    } else if (res.data?.on === false && this.coloursForScores) {
      this.coloursForScores = false;
      await c.update("probabilities", false, vscode.ConfigurationTarget.Global);
    }
    if (res.message) vscode.window.setStatusBarMessage(`Loom: ${res.message.split("\n")[0]}`, 8000);
  }

  /** What the model almost wrote at the cursor: the server's code actions (branch from an alternative, split). */
  async alternatives(): Promise<void> {
    pathEditor();
    await vscode.commands.executeCommand("editor.action.codeAction", { kind: "refactor.rewrite", apply: "never" });
  }

  /**
   * Alt+] / Alt+[ on a suggestion: VS Code's own cycle, followed here, so a word accepted
   * next is known to come from the suggestion shown (VS Code does not say which).
   */
  async cycleSuggestion(delta: 1 | -1): Promise<void> {
    const ed = vscode.window.activeTextEditor;
    await vscode.commands.executeCommand(delta > 0 ? "editor.action.inlineSuggest.showNext" : "editor.action.inlineSuggest.showPrevious");
    if (ed?.document.uri.scheme === SCHEME) this.shownSuggestion(ed.document.uri).cycle(delta);
  }

  /** Escape on a suggestion: hidden, it starts from the first when it shows again. */
  /**
   * Escape over ghost text: hide it, and tell the server the writer dismissed these
   * suggestions (the preference log's `suggestion_dismissed`; VS Code's inline-completion
   * API reports no dismissal, so Loom binds Escape itself while ghost text shows).
   */
  async hideSuggestion(): Promise<void> {
    const ed = vscode.window.activeTextEditor;
    await vscode.commands.executeCommand("editor.action.inlineSuggest.hide");
    if (ed?.document.uri.scheme !== SCHEME) return;
    this.shownSuggestion(ed.document.uri).reset();
    try {
      await this.client.execute(ServerCommands.dismissSuggestion, { uri: ed.document.uri.toString() });
    } catch (err) {
      this.client.log.appendLine(`loom.dismissSuggestion: ${message(err)}`);
    }
  }

  /**
   * Accept part of the suggestion shown (a word, a line), then tell the server which
   * suggestion and how much of it: it makes the accepted text the path, splitting that
   * continuation there, and offers the rest of it (VS Code's API does not report partial
   * accepts to the language client, nor which suggestion Alt+] shows: see ShownSuggestion).
   */
  async acceptPart(builtin: string): Promise<void> {
    const ed = pathEditor();
    const shown = this.shownSuggestion(ed.document.uri).shown();
    // the suggestion is accepted at the cursor, which ends up after what was taken
    const from = ed.document.offsetAt(ed.selection.active);
    // VS Code takes the space before a word as a step of its own: take the word too, so a
    // step never leaves a node of whitespace only
    let accepted = "";
    for (let i = 0; i < 3; i++) {
      const version = ed.document.version;
      await vscode.commands.executeCommand(builtin);
      accepted = ed.document.getText().slice(from, ed.document.offsetAt(ed.selection.active));
      if (ed.document.version === version || accepted.trim() !== "") break;
    }
    if (accepted === "") return; // nothing was accepted
    // the text accepted, said: a Tab pressed meanwhile has already added the rest
    await this.execute(ServerCommands.acceptSuggestion, {
      uri: ed.document.uri.toString(), inserted: true, text: accepted, ...(shown ? { node: shown.node } : {}),
    });
    // what the server offers now (the rest of that suggestion) from scratch: a trigger alone
    // keeps the item VS Code shows, and after a word of the second one it shows the first
    await vscode.commands.executeCommand("editor.action.inlineSuggest.hide");
    this.shownSuggestion(ed.document.uri).reset();
    await vscode.commands.executeCommand("editor.action.inlineSuggest.trigger");
  }

  async cancel(): Promise<void> {
    const r = await this.client.execute<{ ok?: boolean; message?: string } | null>(ServerCommands.cancel, {});
    vscode.window.setStatusBarMessage(`Loom: ${r?.message ?? "cancelling"}`, 4000);
  }

  async commit(): Promise<void> {
    const ed = loomEditor();
    await this.execute(ServerCommands.commit, { uri: ed.document.uri.toString() });
    this.view.refreshSoon();
  }
}
