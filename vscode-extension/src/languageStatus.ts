/**
 * The language status item of Loom editors (the `{}` beside the language in the status
 * bar): whether the server runs, its version, who this editor acts as, and Show Logs.
 */

import * as vscode from "vscode";
import type { LoomClient } from "./client";
import { languageStatusView } from "./serverStatus";

export const SHOW_LOGS_COMMAND = "loom.ui.showLogs";

export class LoomLanguageStatus implements vscode.Disposable {
  private readonly item = vscode.languages.createLanguageStatusItem("loom.server", { language: "loom" });
  private readonly subscription: vscode.Disposable;

  constructor(client: LoomClient) {
    this.item.name = "Loom Server";
    this.item.command = { title: "Show Logs", command: SHOW_LOGS_COMMAND, tooltip: "Loom: Show Server Logs" };
    this.subscription = client.onServerState(() => {
      this.update(client);
    });
    this.update(client);
  }

  private update(client: LoomClient): void {
    const state = client.serverState;
    const view = languageStatusView(state);
    this.item.text = view.text;
    this.item.detail = view.detail;
    this.item.busy = view.busy;
    this.item.severity =
      view.severity === "error"
        ? vscode.LanguageStatusSeverity.Error
        : view.severity === "warning"
          ? vscode.LanguageStatusSeverity.Warning
          : vscode.LanguageStatusSeverity.Information;
    this.item.accessibilityInformation = { label: `${view.text.replace(/\$\([^)]*\)\s*/g, "")}, ${view.detail}` };
  }

  dispose(): void {
    this.subscription.dispose();
    this.item.dispose();
  }
}
