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

/** The texts a server edit puts into each document it changes. */
function editTexts(e: ServerEditEvent): Map<string, string[]> {
  const out = new Map<string, string[]>();
  const add = (uri: string, texts: string[]): void => {
    let key = uri;
    try {
      key = vscode.Uri.parse(uri, true).toString();
    } catch {
      /* as sent */
    }
    out.set(key, [...(out.get(key) ?? []), ...texts]);
  };
  for (const c of e.edit.documentChanges ?? []) {
    if ("textDocument" in c) add(c.textDocument.uri, c.edits.map((x) => ("newText" in x ? x.newText : x.snippet.value)));
  }
  for (const [uri, edits] of Object.entries(e.edit.changes ?? {})) add(uri, edits.map((x) => x.newText));
  return out;
}

export class Writing implements vscode.Disposable {
  private readonly disposables: vscode.Disposable[] = [];
  /** uri → the texts of the server edits being applied there (their changes are Loom's). */
  private readonly applying = new Map<string, string[]>();
  /** uri → the document's version after the user's last change (typing, undo, a paste). */
  private readonly typedAt = new Map<string, number>();
  /** uri → the last version saved (or known clean). */
  private readonly savedAt = new Map<string, number>();
  private readonly savingAt = new Map<string, number>();
  /** uri → a quiet save under way; `again`: one more when it ends. */
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
      vscode.workspace.onWillSaveTextDocument((e) => {
        if (e.document.uri.scheme === SCHEME) this.savingAt.set(e.document.uri.toString(), e.document.version);
      }),
      vscode.workspace.onDidSaveTextDocument((doc) => {
        const key = doc.uri.toString();
        if (doc.uri.scheme === SCHEME) this.savedAt.set(key, this.savingAt.get(key) ?? doc.version);
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
        for (const m of [this.typedAt, this.savedAt, this.savingAt]) m.delete(key);
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
    if (!doc || !doc.isDirty || doc.version !== p.version) {
      this.client.log.appendLine(`loom/clean v${p.version} not applied: ${doc ? `v${doc.version}, ${doc.isDirty ? "dirty" : "clean"}` : "not open"}`);
      return;
    }
    await this.saveQuietly(doc, () => doc.version === p.version);
  }

  /**
   * A change the user made (typing, an undo, an accepted suggestion VS Code inserted) or one
   * of the server's edits (recognised by its text while the edit is applied).
   */
  private changed(e: vscode.TextDocumentChangeEvent): void {
    if (e.document.uri.scheme !== SCHEME) return;
    const key = e.document.uri.toString();
    if (!e.document.isDirty) this.savedAt.set(key, e.document.version);
    if (e.contentChanges.length === 0) return;
    const expected = this.applying.get(key);
    const ours = expected !== undefined && e.contentChanges.every((c) => {
      const i = expected.indexOf(c.text);
      if (i < 0) return false;
      expected.splice(i, 1);
      return true;
    });
    if (!ours) this.typedAt.set(key, e.document.version);
  }

  private willApplyEdit(e: ServerEditEvent): void {
    for (const [uri, texts] of editTexts(e)) {
      const doc = vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri);
      if (!doc) continue;
      // clean now: all it holds is saved
      if (!doc.isDirty) this.savedAt.set(uri, doc.version);
      this.applying.set(uri, [...(this.applying.get(uri) ?? []), ...texts]);
    }
  }

  /**
   * The server's edit is in (a generation streaming, a switch, a command's result): a
   * document nobody typed in since its last save is saved again at once, quietly (the
   * server has this text), so the tab does not say "unsaved" for the length of a
   * generation; VS Code would also ask to save it on close.
   */
  private didApplyEdit(e: ServerEditEvent): void {
    for (const uri of editedUris(e.edit)) {
      this.applying.delete(uri);
      const doc = vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri);
      if (e.applied && doc && this.onlyLoomsSinceSave(doc)) void this.saveQuietly(doc, () => this.onlyLoomsSinceSave(doc));
    }
  }

  /** Dirty with the server's edits only: nothing typed since the last save. */
  private onlyLoomsSinceSave(doc: vscode.TextDocument): boolean {
    const key = doc.uri.toString();
    const saved = this.savedAt.get(key);
    return doc.isDirty && saved !== undefined && (this.typedAt.get(key) ?? 0) <= saved;
  }

  /**
   * Save a document whose text the server already has: the file-system provider only
   * records it (no loom/save, no didSave). One at a time per document; a request made
   * meanwhile saves once more after, if `still()` holds then.
   */
  private async saveQuietly(doc: vscode.TextDocument, still: () => boolean): Promise<void> {
    const key = doc.uri.toString();
    this.again.set(key, still);
    const running = this.saving.get(key);
    if (running) return running;
    const run = async (): Promise<void> => {
      for (let check = this.again.get(key); check; check = this.again.get(key)) {
        this.again.delete(key);
        if (!doc.isDirty || doc.isClosed || !check()) continue;
        this.fs.markSynced(doc.uri);
        try {
          await doc.save();
        } catch (err) {
          this.client.log.appendLine(`marking ${key} saved: ${String(err)}`);
        } finally {
          this.fs.clearSynced(doc.uri);
        }
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
