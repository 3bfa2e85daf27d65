/**
 * What keeps writing in a `loom:` document smooth: Loom's own edits (a sibling switch, a
 * generation, a command that ran) leave the document saved, not dirty; `->` typed at the
 * start of a line becomes `→`.
 */

import * as vscode from "vscode";
import { asciiArrowAt } from "./arrow";
import type { LoomClient } from "./client";
import type { LoomFileSystem } from "./fsProvider";
import type { CleanNotification } from "./protocol";
import { SCHEME } from "./uris";

export class Writing implements vscode.Disposable {
  private readonly disposables: vscode.Disposable[] = [];

  constructor(
    private readonly client: LoomClient,
    private readonly fs: LoomFileSystem,
  ) {
    this.disposables.push(
      client.onClean((p) => {
        void this.clean(p);
      }),
      vscode.workspace.onDidChangeTextDocument((e) => {
        this.arrow(e);
      }),
      vscode.window.tabGroups.onDidChangeTabs((e) => {
        this.tabsOpened(e.opened);
        this.tabsClosed(e.closed);
      }),
      vscode.workspace.onDidCloseTextDocument((doc) => {
        this.client.hidden.delete(doc.uri.toString());
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
    this.fs.markSynced(doc.uri);
    try {
      await doc.save();
    } catch (err) {
      this.client.log.appendLine(`marking ${p.uri} saved: ${String(err)}`);
    }
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
