/**
 * What keeps writing in a `loom:` document smooth: Loom's own edits (a sibling switch, a
 * generation streaming in, a command that ran) leave the document saved, not dirty; `->`
 * typed at the start of a line becomes `→`.
 */

import * as vscode from "vscode";
import { asciiArrowAt } from "./arrow";
import { editedUris, type LoomClient, type ServerEditEvent } from "./client";
import type { LoomFileSystem } from "./fsProvider";
import type { CleanNotification } from "./protocol";
import { SCHEME } from "./uris";

export class Writing implements vscode.Disposable {
  private readonly disposables: vscode.Disposable[] = [];
  /** uri → server edits being applied there, and the document changes seen meanwhile. */
  private readonly applying = new Map<string, { edits: number; changes: number }>();
  /** uri → the document's version after the user's last change (typing, undo, a paste). */
  private readonly typedAt = new Map<string, number>();
  /** uri → its version when the user last saved it (or it was known to be as saved). */
  private readonly savedAt = new Map<string, number>();
  /** Documents being saved quietly (Loom's text): their saves are not the user's. */
  private readonly quiet = new Set<string>();
  /** uri → a quiet save under way; `again`: one more when it ends, if that holds then. */
  private readonly saving = new Map<string, Promise<void>>();
  private readonly again = new Map<string, () => boolean>();

  constructor(
    private readonly client: LoomClient,
    private readonly fs: LoomFileSystem,
  ) {
    this.disposables.push(
      client.onClean((p) => {
        void this.clean(p);
      }),
      vscode.workspace.onDidChangeTextDocument((e) => {
        this.changed(e);
        this.arrow(e);
      }),
      vscode.workspace.onDidOpenTextDocument((doc) => {
        if (doc.uri.scheme === SCHEME && !doc.isDirty) this.savedAt.set(doc.uri.toString(), doc.version);
      }),
      vscode.workspace.onWillSaveTextDocument((e) => {
        const key = e.document.uri.toString();
        // the user's save: what they typed up to here goes to the server
        if (e.document.uri.scheme === SCHEME && !this.quiet.has(key)) this.savedAt.set(key, e.document.version);
      }),
      client.onWillApplyEdit((e) => {
        this.willApplyEdit(e);
      }),
      client.onDidApplyEdit((e) => {
        this.didApplyEdit(e);
      }),
      vscode.window.tabGroups.onDidChangeTabs((e) => {
        this.tabsOpened(e.opened);
        this.tabsClosed(e.closed);
      }),
      vscode.workspace.onDidCloseTextDocument((doc) => {
        const key = doc.uri.toString();
        this.client.hidden.delete(key);
        this.typedAt.delete(key);
        this.savedAt.delete(key);
      }),
    );
  }

  /**
   * VS Code keeps a document open after its last tab closes ("Don't Save" during a
   * generation), and reopens it in a tab as soon as an edit makes it dirty: tell the
   * server (its changes then come as a reload, and a generation landing there says where
   * it went), and refuse its edits meanwhile (LoomClient.hidden).
   */
  private tabsClosed(closed: readonly vscode.Tab[]): void {
    const open = new Set<string>();
    for (const group of vscode.window.tabGroups.all) {
      for (const tab of group.tabs) {
        if (tab.input instanceof vscode.TabInputText) open.add(tab.input.uri.toString());
      }
    }
    for (const tab of closed) {
      if (!(tab.input instanceof vscode.TabInputText)) continue;
      const uri = tab.input.uri;
      if (uri.scheme !== SCHEME || open.has(uri.toString())) continue;
      this.client.notify("loom/tabClosed", { uri: uri.toString() });
      if (vscode.workspace.textDocuments.some((d) => d.uri.toString() === uri.toString())) this.client.hidden.add(uri.toString());
    }
  }

  /** A tab shows a document again: the server's changes are edits again. */
  private tabsOpened(opened: readonly vscode.Tab[]): void {
    for (const tab of opened) {
      if (!(tab.input instanceof vscode.TabInputText) || tab.input.uri.scheme !== SCHEME) continue;
      const uri = tab.input.uri.toString();
      if (this.client.hidden.delete(uri)) this.client.notify("loom/tabOpened", { uri });
    }
  }

  /**
   * The server says the document, at this version, shows only what the tree holds: save
   * it without a round trip (the file-system provider just records it), so VS Code never
   * asks to save changes the user did not make. A keystroke since then changes the
   * version, and the user's text stays unsaved.
   */
  private async clean(p: CleanNotification): Promise<void> {
    const doc = vscode.workspace.textDocuments.find((d) => d.uri.toString() === p.uri);
    if (!doc || !this.shownUnsaved(doc) || doc.version !== p.version) {
      this.client.log.appendLine(`loom/clean v${p.version} not applied: ${doc ? `v${doc.version}, ${this.shownUnsaved(doc) ? "dirty" : "clean"}` : "not open"}`);
      return;
    }
    await this.saveQuietly(doc, () => doc.version === p.version);
  }

  /**
   * A change the user made (typing, an undo, an accepted suggestion VS Code inserted), or
   * one while a server edit is applied, counted: which one was the server's is known when
   * the edit is in (VS Code reports the edit as the smallest change, not as the server
   * sent it).
   */
  private changed(e: vscode.TextDocumentChangeEvent): void {
    if (e.document.uri.scheme !== SCHEME || e.contentChanges.length === 0) return;
    const key = e.document.uri.toString();
    const applying = this.applying.get(key);
    if (applying) {
      // the server's edit, most likely: saved at once, a step ahead of the edit's answer
      // (the next piece of a generation comes 80 ms later: a save it overtakes fails)
      if (++applying.changes === 1 && this.nothingTyped(e.document)) {
        const doc = e.document;
        void this.saveQuietly(doc, () => this.nothingTyped(doc));
      }
    } else {
      this.typedAt.set(key, e.document.version);
    }
    // back to the text as saved (an undo, a revert, a reload): nothing of the user's unsaved
    // (isDirty is exact with a change; alone, after a save, it can be stale)
    if (!e.document.isDirty) this.savedAt.set(key, e.document.version);
  }

  private willApplyEdit(e: ServerEditEvent): void {
    for (const uri of editedUris(e.edit)) {
      const doc = vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri);
      if (!doc) continue;
      if (!this.savedAt.has(uri) && !doc.isDirty) this.savedAt.set(uri, doc.version);
      const applying = this.applying.get(uri) ?? { edits: 0, changes: 0 };
      applying.edits++;
      this.applying.set(uri, applying);
    }
  }

  /**
   * The server's edit is in (a generation streaming, a switch, a command's result): a
   * document nobody typed in since the user last saved it is saved again at once, quietly
   * (the server has this text), so the tab does not say "unsaved" for the length of a
   * generation, nor VS Code ask to save it on close.
   */
  private didApplyEdit(e: ServerEditEvent): void {
    for (const uri of editedUris(e.edit)) {
      const applying = this.applying.get(uri);
      const doc = vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri);
      if (!applying || !doc) continue;
      // an applied edit is one change: more, and a keystroke came in meanwhile
      applying.changes -= e.applied ? 1 : 0;
      if (--applying.edits > 0) continue;
      this.applying.delete(uri);
      if (applying.changes > 0) this.typedAt.set(uri, doc.version);
      if (e.applied && this.nothingTyped(doc)) void this.saveQuietly(doc, () => this.nothingTyped(doc));
    }
  }

  /** Nothing typed since the user last saved: what is unsaved is Loom's. */
  private nothingTyped(doc: vscode.TextDocument): boolean {
    const key = doc.uri.toString();
    const saved = this.savedAt.get(key);
    return saved !== undefined && (this.typedAt.get(key) ?? 0) <= saved;
  }

  /**
   * Whether VS Code shows the document unsaved. The tab says it best: after a save that
   * an edit overtook, the document itself can say clean while the tab stays dirty.
   */
  private shownUnsaved(doc: vscode.TextDocument): boolean {
    const key = doc.uri.toString();
    const tabs = vscode.window.tabGroups.all.flatMap((g) => g.tabs)
      .filter((t) => t.input instanceof vscode.TabInputText && t.input.uri.toString() === key);
    return doc.isDirty || tabs.some((t) => t.isDirty);
  }

  /**
   * Save a document whose text the server already has: the file-system provider only
   * records it (no loom/save, no didSave). One at a time per document; a request made
   * meanwhile saves once more after, if `still()` holds then; so does a save an edit
   * overtook (the tab still dirty).
   */
  private async saveQuietly(doc: vscode.TextDocument, still: () => boolean): Promise<void> {
    const key = doc.uri.toString();
    this.again.set(key, still);
    const running = this.saving.get(key);
    if (running) return running;
    const run = async (): Promise<void> => {
      let retries = 0;
      for (let check = this.again.get(key); check; check = this.again.get(key)) {
        this.again.delete(key);
        if (doc.isClosed || !check() || !this.shownUnsaved(doc)) continue;
        const version = doc.version;
        this.fs.markSynced(doc.uri);
        this.quiet.add(key);
        try {
          const saved = await doc.save();
          this.client.log.trace(`quiet save of v${version}: ${saved ? "saved" : "not saved"}, now v${doc.version}${this.shownUnsaved(doc) ? ", dirty" : ""}`);
        } catch (err) {
          this.client.log.appendLine(`marking ${key} saved: ${String(err)}`);
        } finally {
          this.fs.clearSynced(doc.uri);
          this.quiet.delete(key);
        }
        if (!this.again.has(key) && doc.version === version && this.shownUnsaved(doc) && retries++ < 3) this.again.set(key, check);
      }
    };
    const p = run().finally(() => {
      this.saving.delete(key);
      const more = this.again.get(key);
      if (more) void this.saveQuietly(doc, more);
    });
    this.saving.set(key, p);
    return p;
  }

  private arrow(e: vscode.TextDocumentChangeEvent): void {
    if (e.document.uri.scheme !== SCHEME || e.contentChanges.length !== 1) return;
    const change = e.contentChanges[0];
    if (change.text !== " " || change.rangeLength !== 0) return;
    const line = change.range.start.line;
    const upTo = e.document.lineAt(line).text.slice(0, change.range.start.character + 1);
    const found = asciiArrowAt(upTo);
    if (!found) return;
    const edit = new vscode.WorkspaceEdit();
    edit.replace(e.document.uri, new vscode.Range(line, found.start, line, found.end), "→");
    void vscode.workspace.applyEdit(edit);
  }

  dispose(): void {
    for (const d of this.disposables) d.dispose();
  }
}
