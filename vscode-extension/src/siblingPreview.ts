/**
 * The sibling picker's preview: a read-only document under the editor that shows the whole
 * text of the sibling the picker is on (a row of the picker has room for one line of it),
 * updated as the user moves, while the keyboard stays in the picker. It opens in an editor
 * group of its own below the editor, out from under the picker (which VS Code draws over
 * the top of the window), and that group closes with it.
 */

import * as vscode from "vscode";

export const PREVIEW_SCHEME = "loom-sibling";

export class SiblingPreview implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly texts = new Map<string, string>();
  private readonly emitter = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.emitter.event;
  private readonly registration: vscode.Disposable;
  private count = 0;

  constructor() {
    this.registration = vscode.workspace.registerTextDocumentContentProvider(PREVIEW_SCHEME, this);
  }

  /** A preview document of its own for one picker (its tab is named by `title`). */
  newUri(title: string): vscode.Uri {
    return vscode.Uri.from({ scheme: PREVIEW_SCHEME, path: `/${title.replace(/\//g, "∕")}`, query: String(++this.count) });
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.texts.get(uri.toString()) ?? "";
  }

  /**
   * Open the preview with `text` below `origin` (beside the active editor without one),
   * then give the focus back to `origin`: done before the picker shows, which keeps the
   * focus from then on.
   */
  async open(uri: vscode.Uri, text: string, origin: vscode.TextEditor | undefined): Promise<void> {
    this.texts.set(uri.toString(), text);
    let doc = await vscode.workspace.openTextDocument(uri);
    // prose as in the path documents (wrapped, the grammar's colours)
    doc = await vscode.languages.setTextDocumentLanguage(doc, "loom");
    if (!origin) {
      await vscode.window.showTextDocument(doc, { viewColumn: vscode.ViewColumn.Beside, preview: true, preserveFocus: true });
      return;
    }
    await vscode.window.showTextDocument(origin.document, { viewColumn: origin.viewColumn });
    await vscode.commands.executeCommand("workbench.action.newGroupBelow");
    await vscode.window.showTextDocument(doc, { viewColumn: vscode.window.tabGroups.activeTabGroup.viewColumn, preview: true });
    await vscode.window.showTextDocument(origin.document, { viewColumn: origin.viewColumn });
  }

  /** Show `text` in the open preview. */
  update(uri: vscode.Uri, text: string): void {
    if (this.texts.get(uri.toString()) === text) return;
    this.texts.set(uri.toString(), text);
    this.emitter.fire(uri);
  }

  /** Close the preview, and its group when it holds nothing else. */
  async close(uri: vscode.Uri): Promise<void> {
    const key = uri.toString();
    this.texts.delete(key);
    const mine = (t: vscode.Tab): boolean => t.input instanceof vscode.TabInputText && t.input.uri.toString() === key;
    for (const group of vscode.window.tabGroups.all) {
      const tabs = group.tabs.filter(mine);
      if (!tabs.length) continue;
      if (tabs.length === group.tabs.length) await vscode.window.tabGroups.close(group, true);
      else await vscode.window.tabGroups.close(tabs, true);
    }
  }

  dispose(): void {
    this.registration.dispose();
    this.emitter.dispose();
  }
}
