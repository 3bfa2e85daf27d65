/** The Loom extension: `loom serve` as a language server, `loom:` documents, the Loom view. */

import * as vscode from "vscode";
import { LoomClient } from "./client";
import { Commands } from "./commands";
import { ExplorationProgress } from "./exploring";
import { LoomFileSystem } from "./fsProvider";
import { LoomLanguageStatus, SHOW_LOGS_COMMAND } from "./languageStatus";
import { ModelPicker } from "./modelPicker";
import { LoomStatusBar } from "./statusBar";
import { LoomTreeProvider } from "./treeView";
import { SCHEME } from "./uris";
import { Writing } from "./writing";

let client: LoomClient | undefined;

export interface LoomApi {
  client: LoomClient;
  fs: LoomFileSystem;
  view: LoomTreeProvider;
  commands: Commands;
}

export function activate(context: vscode.ExtensionContext): LoomApi {
  const log = vscode.window.createOutputChannel("Loom", { log: true });
  const { version } = context.extension.packageJSON as { version?: string };
  const c = new LoomClient(log, version ?? "0.0.0");
  client = c;
  const fs = new LoomFileSystem(c);
  const view = new LoomTreeProvider(c);
  const commands = new Commands(c, view);
  context.subscriptions.push(
    log,
    c,
    fs,
    view,
    vscode.workspace.registerFileSystemProvider(SCHEME, fs, { isCaseSensitive: true }),
    vscode.window.createTreeView("loom.trees", { treeDataProvider: view, showCollapseAll: true }),
    new LoomStatusBar(c),
    new ModelPicker(c),
    new ExplorationProgress(c),
    new LoomLanguageStatus(c),
    vscode.commands.registerCommand(SHOW_LOGS_COMMAND, () => {
      log.show();
    }),
    new Writing(c, fs),
  );
  commands.register(context);

  // loom: documents have no file extension: give them their language (loom, or markdown for
  // documents) as they open, which is also when the language client starts syncing them.
  const ensureLanguage = (doc: vscode.TextDocument): void => {
    if (doc.uri.scheme !== SCHEME) return;
    const want = fs.languageOf(doc.uri);
    if (want && doc.languageId !== want) {
      vscode.languages.setTextDocumentLanguage(doc, want).then(undefined, (err: unknown) => {
        log.appendLine(`setting the language of ${doc.uri.toString()}: ${String(err)}`);
      });
    }
  };
  context.subscriptions.push(
    vscode.workspace.onDidOpenTextDocument(ensureLanguage),
    vscode.workspace.onWillSaveTextDocument((e) => {
      if (e.document.uri.scheme === SCHEME) fs.noteSaveReason(e.document.uri, e.reason);
    }),
  );
  vscode.workspace.textDocuments.forEach(ensureLanguage);

  void c.ready().then(() => {
    view.refresh();
  });
  return { client: c, fs, view, commands };
}

export async function deactivate(): Promise<void> {
  await client?.stop();
  client = undefined;
}
