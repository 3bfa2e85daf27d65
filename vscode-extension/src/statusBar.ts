/** The status-bar item: the current node, or a generation in progress (click to cancel). */

import * as vscode from "vscode";
import type { LoomClient } from "./client";
import { Methods, type StatusNotification, type StatusResult } from "./protocol";
import { statusView } from "./status";
import { SCHEME } from "./uris";

export const CANCEL_COMMAND = "loom.ui.cancel";

export class LoomStatusBar implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem("loom.status", vscode.StatusBarAlignment.Left, 50);
  private readonly last = new Map<string, StatusNotification>();
  private generating = false;
  private readonly disposables: vscode.Disposable[] = [this.item];

  constructor(private readonly client: LoomClient) {
    this.item.name = "Loom";
    this.disposables.push(
      client.onStatus((s) => {
        this.last.set(s.uri, s);
        this.setGenerating(s.generating);
        this.update();
      }),
      vscode.window.onDidChangeActiveTextEditor(() => {
        void this.fetch();
      }),
    );
    void this.fetch();
  }

  private setGenerating(on: boolean): void {
    if (on === this.generating) return;
    this.generating = on;
    void vscode.commands.executeCommand("setContext", "loom.generating", on);
  }

  private activeUri(): string | undefined {
    const ed = vscode.window.activeTextEditor;
    return ed && ed.document.uri.scheme === SCHEME ? ed.document.uri.toString() : undefined;
  }

  /** Ask the server for the active document's status (on editor switch). */
  async fetch(): Promise<void> {
    const uri = this.activeUri();
    if (!uri || !this.client.running) {
      this.update();
      return;
    }
    try {
      const r = await this.client.request<StatusResult | null>(Methods.status, { uri });
      if (r) this.last.set(uri, { uri, ...r });
    } catch {
      /* the document may not be known yet: keep what we have */
    }
    this.update();
  }

  update(): void {
    const uri = this.activeUri();
    const generatingElsewhere = [...this.last.values()].find((s) => s.generating);
    const s = (uri ? this.last.get(uri) : undefined) ?? generatingElsewhere;
    const view = statusView(s?.generating ? s : uri ? s : undefined);
    if (!view) {
      this.item.hide();
      return;
    }
    this.item.text = view.text;
    this.item.tooltip = view.tooltip;
    this.item.command = view.cancellable ? CANCEL_COMMAND : "loom.ui.refresh";
    this.item.backgroundColor = view.cancellable ? new vscode.ThemeColor("statusBarItem.warningBackground") : undefined;
    this.item.show();
  }

  dispose(): void {
    for (const d of this.disposables) d.dispose();
  }
}
