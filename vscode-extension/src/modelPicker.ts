/** The model picker: a status-bar item naming the model `continue` asks in the active
 * Loom document's tree; a click (or Loom: Choose Model…) picks another for that tree. */

import * as vscode from "vscode";
import type { LoomClient } from "./client";
import { pickerRows, pickerText } from "./modelItems";
import { ServerCommands, type ModelsResult } from "./protocol";
import { SCHEME } from "./uris";

export const CHOOSE_MODEL_COMMAND = "loom.ui.chooseModel";

export class ModelPicker implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem("loom.model", vscode.StatusBarAlignment.Left, 49);
  private readonly disposables: vscode.Disposable[] = [this.item];

  constructor(private readonly client: LoomClient) {
    this.item.name = "Loom Model";
    this.item.command = CHOOSE_MODEL_COMMAND;
    this.disposables.push(
      vscode.commands.registerCommand(CHOOSE_MODEL_COMMAND, () => this.choose()),
      vscode.window.onDidChangeActiveTextEditor(() => {
        void this.refresh();
      }),
    );
    void client.ready().then(() => this.refresh());
  }

  private activeUri(): string | undefined {
    const ed = vscode.window.activeTextEditor;
    return ed && ed.document.uri.scheme === SCHEME ? ed.document.uri.toString() : undefined;
  }

  private async models(uri: string): Promise<ModelsResult | undefined> {
    const r = await this.client.execute<{ ok?: boolean; data?: ModelsResult }>(ServerCommands.models, { uri });
    return r && r.ok !== false ? r.data : undefined;
  }

  /** Show the model the active document's tree continues with (hidden elsewhere). */
  async refresh(): Promise<void> {
    const uri = this.activeUri();
    const data = uri && this.client.running ? await this.models(uri).catch(() => undefined) : undefined;
    if (!data?.current) {
      this.item.hide();
      return;
    }
    this.item.text = `$(hubot) ${pickerText(data)}`;
    const preset = data.preset ? ` with preset ${data.preset}` : "";
    this.item.tooltip = `Loom: continue asks ${data.current}${preset} in this tree — click to choose another model or preset`;
    this.item.show();
  }

  /** A quick pick of the models and the sampler presets; the chosen one is what continue
   * asks (or samples with) in this tree. */
  async choose(): Promise<void> {
    const uri = this.activeUri();
    if (!uri) {
      void vscode.window.showInformationMessage("Loom: open a Loom document to choose its model");
      return;
    }
    const data = await this.models(uri);
    if (!data) return;
    const items = pickerRows(data).map((row) => ({
      ...row,
      kind: row.kind === "separator" ? vscode.QuickPickItemKind.Separator : vscode.QuickPickItemKind.Default,
      row,
    }));
    const preset = data.preset ? ` with preset ${data.preset}` : "";
    const pick = await vscode.window.showQuickPick(items, {
      placeHolder: `The model continue asks in this tree, or a sampler preset (now ${data.current}${preset})`,
      matchOnDescription: true,
    });
    if (!pick || pick.row.kind === "separator") return;
    const args = pick.row.kind === "preset" ? { uri, preset: pick.row.preset } : { uri, profile: pick.row.profile };
    const r = await this.client.execute<{ ok?: boolean; message?: string }>(ServerCommands.chooseModel, args);
    const message = r?.message?.split("\n")[0] ?? "";
    if (r?.ok === false) void vscode.window.showErrorMessage(`Loom: ${message}`);
    else vscode.window.setStatusBarMessage(`Loom: ${message}`, 5000);
    await this.refresh();
  }

  dispose(): void {
    for (const d of this.disposables) d.dispose();
  }
}
