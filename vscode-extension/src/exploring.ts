/**
 * Explorations (`→ explore`) as notifications with a Cancel button. The server sends
 * `loom/exploring` (begin, a report per step, end) because this client declares
 * `experimental.loomExplorationProgress`; work-done progress would go to the status bar,
 * where VS Code offers no Cancel. Cancel runs `loom.stopExploring` for the tree: the
 * exploration ends between steps with nothing half-written, and the server says the
 * summary (`✓ stopped exploring from [a7x2]: …`).
 */

import * as vscode from "vscode";
import type { LoomClient } from "./client";
import { ServerCommands, type ExploringNotification } from "./protocol";

interface Shown {
  progress: vscode.Progress<{ message?: string }>;
  end: () => void;
}

export class ExplorationProgress implements vscode.Disposable {
  private readonly shown = new Map<string, Shown>();
  private readonly disposables: vscode.Disposable[] = [];

  constructor(private readonly client: LoomClient) {
    this.disposables.push(
      client.onExploring((e) => {
        this.on(e);
      }),
      // a server that stopped sends no end: its explorations are gone with it
      client.onState((state) => {
        if (state === "stopped") this.endAll();
      }),
    );
  }

  private on(e: ExploringNotification): void {
    if (e.kind === "begin") {
      this.begin(e);
      return;
    }
    const shown = this.shown.get(e.token);
    if (!shown) return;
    if (e.kind === "report") {
      shown.progress.report({ message: e.message });
    } else {
      this.shown.delete(e.token);
      shown.end();
    }
  }

  private begin(e: ExploringNotification): void {
    if (this.shown.has(e.token)) return;
    void vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: e.title, cancellable: true },
      (progress, cancel) =>
        new Promise<void>((resolve) => {
          this.shown.set(e.token, { progress, end: resolve });
          progress.report({ message: e.message });
          cancel.onCancellationRequested(() => {
            this.client.log.appendLine(`exploration of ${e.tree} cancelled from its notification: loom.stopExploring`);
            vscode.window.setStatusBarMessage("Loom: stopping the exploration…", 4000);
            this.client
              .execute<{ ok?: boolean; text?: string; message?: string } | null>(ServerCommands.stopExploring, { tree: e.tree })
              .then(
                (r) => {
                  const said = (r?.text ?? r?.message ?? "").split("\n")[0];
                  if (r?.ok === false) void vscode.window.showErrorMessage(`Loom: ${said || "the exploration did not stop"}`);
                  else if (said) vscode.window.setStatusBarMessage(`Loom: ${said}`, 5000);
                },
                (err: unknown) => {
                  void vscode.window.showErrorMessage(`Loom: stopping the exploration failed: ${err instanceof Error ? err.message : String(err)}`);
                },
              );
          });
        }),
    );
  }

  private endAll(): void {
    for (const shown of this.shown.values()) shown.end();
    this.shown.clear();
  }

  dispose(): void {
    this.endAll();
    for (const d of this.disposables) d.dispose();
  }
}
