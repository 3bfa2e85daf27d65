/** Starting `loom serve` and talking to it: the language client and the custom protocol. */

import { execFile } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as vscode from "vscode";
import {
  CancellationToken,
  DidChangeConfigurationNotification,
  ExecuteCommandRequest,
  LanguageClient,
  type LanguageClientOptions,
  ResponseError,
  type ServerOptions,
  State,
  type StaticFeature,
  type WorkspaceEdit,
} from "vscode-languageclient/node";
import {
  errorOf,
  Methods,
  type CleanNotification,
  type DocumentChangedNotification,
  type ExploringNotification,
  type TreesChangedNotification,
  type ServerSettings,
  type StatusNotification,
} from "./protocol";
import { describeServer, resolveServerCommand, ServerNotFound, type ServerCommand } from "./serverCommand";
import type { ServerPhase, ServerState } from "./serverStatus";
import { offeredItems, type Offered } from "./shownSuggestion";
import { SCHEME } from "./uris";
import { checkVersion } from "./version";

export const CLIENT_ID = "loom";

/** The settings sent to the server (initializationOptions and didChangeConfiguration). */
export function serverSettings(): ServerSettings {
  const c = vscode.workspace.getConfiguration("loom");
  const settings: ServerSettings = {
    participant: c.get<string>("participant", "human") || "human",
    defaultN: c.get<number>("defaultN", 3),
    defaultTokens: c.get<number>("defaultTokens", 50),
    inlayHints: c.get<boolean>("inlayHints", true),
    markers: c.get<"siblings" | "all">("markers", "siblings"),
    runOnSave: c.get<boolean>("runOnSave", true),
    documentProvider: "fileSystem",
    probabilities: c.get<boolean>("probabilities", false),
    alternativeContinues: c.get<boolean>("alternativeContinues", true),
    inlineSuggestions: c.get<boolean>("inlineSuggestions", true),
  };
  const db = restrictedSetting("database").trim();
  if (db) settings.database = db.startsWith("~/") ? os.homedir() + db.slice(1) : db;
  return settings;
}

function isExecutable(file: string): boolean {
  try {
    const st = fs.statSync(file);
    if (!st.isFile()) return false;
    if (process.platform === "win32") return true;
    fs.accessSync(file, fs.constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * A setting that names an executable or a database (package.json's restrictedConfigurations):
 * in Restricted Mode only the user's value counts, never the workspace's. VS Code drops
 * those workspace values itself; reading them this way keeps it so whatever VS Code does.
 */
function restrictedSetting(key: string): string {
  const c = vscode.workspace.getConfiguration("loom");
  if (vscode.workspace.isTrusted) return c.get<string>(key, "");
  const i = c.inspect<string>(key);
  return i?.globalValue ?? i?.defaultValue ?? "";
}

export function serverCommand(): ServerCommand {
  return resolveServerCommand(
    {
      serverPath: restrictedSetting("server.path"),
      python: restrictedSetting("server.python"),
      database: restrictedSetting("database"),
    },
    {
      isExecutable,
      pathDirs: (process.env.PATH ?? "").split(process.platform === "win32" ? ";" : ":"),
      workspaceDirs: (vscode.workspace.workspaceFolders ?? [])
        .filter((f) => f.uri.scheme === "file")
        .map((f) => f.uri.fsPath),
      platform: process.platform,
      trusted: vscode.workspace.isTrusted,
    },
    os.homedir(),
  );
}

/**
 * What `<server> --version` printed; undefined if it exited with an error (a server without
 * `--version`); null if it could not run or took too long (the start reports that itself).
 */
function serverVersionOutput(cmd: ServerCommand, log: vscode.LogOutputChannel): Promise<string | undefined | null> {
  return new Promise((resolve) => {
    execFile(cmd.command, cmd.versionArgs, { timeout: 20_000, env: { ...process.env, PYTHONUNBUFFERED: "1" } }, (err, stdout, stderr) => {
      if (err) {
        log.warn(`${describeServer(cmd)} --version failed: ${err.message.trim()}`);
        resolve(typeof err.code === "number" && !err.killed ? undefined : null);
        return;
      }
      resolve(`${stdout}${stderr}`);
    });
  });
}

/**
 * This extension serves `loom:` documents through a FileSystemProvider (writable), so the
 * client must not also register the LSP 3.18 text-document-content provider for the scheme:
 * drop the capability on both sides.
 */
class NoTextDocumentContent implements StaticFeature {
  constructor(private readonly log: vscode.LogOutputChannel) {}
  fillClientCapabilities(capabilities: { workspace?: Record<string, unknown> }): void {
    if (capabilities.workspace) delete capabilities.workspace.textDocumentContent;
  }
  preInitialize(capabilities: { workspace?: Record<string, unknown> }): void {
    if (capabilities.workspace?.textDocumentContent) {
      this.log.appendLine(
        "server advertises workspace/textDocumentContent although documentProvider is \"fileSystem\": ignored (loom: documents come from the file-system provider)",
      );
      delete capabilities.workspace.textDocumentContent;
    }
  }
  initialize(): void {
    /* nothing */
  }
  getState(): { kind: "static" } {
    return { kind: "static" };
  }
  clear(): void {
    /* nothing */
  }
}

/**
 * Asks for `loom/exploring` instead of work-done progress for explorations: VS Code's client
 * shows server-initiated progress in the status bar, where it offers no Cancel (see
 * `exploring.ts`, which shows them as notifications with one).
 */
class ExplorationProgressCapability implements StaticFeature {
  fillClientCapabilities(capabilities: { experimental?: unknown }): void {
    const given = capabilities.experimental && typeof capabilities.experimental === "object" ? capabilities.experimental : {};
    capabilities.experimental = { ...given, loomExplorationProgress: true };
  }
  initialize(): void {
    /* nothing */
  }
  getState(): { kind: "static" } {
    return { kind: "static" };
  }
  clear(): void {
    /* nothing */
  }
}

/** The documents a workspace edit from the server changes, as VS Code spells their URIs. */
export function editedUris(edit: WorkspaceEdit): string[] {
  const raw = [
    ...(edit.documentChanges ?? []).flatMap((c) => ("textDocument" in c ? [c.textDocument.uri] : [])),
    ...Object.keys(edit.changes ?? {}),
  ];
  return raw.map((u) => {
    try {
      return vscode.Uri.parse(u, true).toString();
    } catch {
      return u;
    }
  });
}

/** The inline suggestions the server offered in a document, at a version of it. */
export interface InlineItemsEvent {
  uri: string;
  version: number;
  items: Offered[];
}

/** A workspace edit from the server, before and after the editor applied it. */
export interface ServerEditEvent {
  edit: WorkspaceEdit;
  /** Set once the editor has answered. */
  applied?: boolean;
}

export class LoomClient implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private starting: Promise<LanguageClient | undefined> | undefined;
  private readonly disposables: vscode.Disposable[] = [];
  private readonly clientDisposables: vscode.Disposable[] = [];
  private readonly documentChangedEmitter = new vscode.EventEmitter<DocumentChangedNotification>();
  private readonly statusEmitter = new vscode.EventEmitter<StatusNotification>();
  private readonly cleanEmitter = new vscode.EventEmitter<CleanNotification>();
  private readonly stateEmitter = new vscode.EventEmitter<"running" | "stopped">();
  private readonly treesChangedEmitter = new vscode.EventEmitter<TreesChangedNotification>();
  private readonly exploringEmitter = new vscode.EventEmitter<ExploringNotification>();
  private readonly inlineItemsEmitter = new vscode.EventEmitter<InlineItemsEvent>();
  private readonly serverStateEmitter = new vscode.EventEmitter<ServerState>();
  /** The server's phase, version and who this editor acts as (the language status item). */
  readonly onServerState = this.serverStateEmitter.event;
  serverState: ServerState;
  /** Version warnings already shown (one per server and version, not one per restart). */
  private readonly versionWarned = new Set<string>();
  /** The command line of the server started last. */
  private command: ServerCommand | undefined;
  private readonly willApplyEditEmitter = new vscode.EventEmitter<ServerEditEvent>();
  private readonly didApplyEditEmitter = new vscode.EventEmitter<ServerEditEvent>();
  /** The inline suggestions each answer of the server offered (VS Code does not say which it shows). */
  readonly onInlineItems = this.inlineItemsEmitter.event;
  /** A server edit is about to be applied: the document changes it makes are Loom's, not typing. */
  readonly onWillApplyEdit = this.willApplyEditEmitter.event;
  readonly onDidApplyEdit = this.didApplyEditEmitter.event;
  /**
   * Documents whose last write only recorded a save (`LoomFileSystem.markSynced`): their
   * `textDocument/didSave` is not sent, since the server already has that text (and a save
   * would make it commit and run command lines while a generation streams in).
   */
  readonly quietSaves = new Set<string>();
  readonly onDocumentChanged = this.documentChangedEmitter.event;
  /** The server's `loom/treesChanged`: trees changed anywhere (a tree made from the CLI). */
  readonly onTreesChanged = this.treesChangedEmitter.event;
  /** The server's `loom/exploring`: an exploration began, went a step, or ended. */
  readonly onExploring = this.exploringEmitter.event;
  readonly onStatus = this.statusEmitter.event;
  /** The server's `loom/clean`: a document shows only what the tree holds. */
  readonly onClean = this.cleanEmitter.event;
  readonly onState = this.stateEmitter.event;
  lastError: string | undefined;
  /** Server commands answered here instead (the sibling picker). */
  readonly localCommands = new Map<string, (args: unknown[]) => Promise<unknown>>();
  /** Set when the server could not start: no retries until the settings change or a restart. */
  private failed = false;
  /**
   * `loom:` documents VS Code keeps open after their last tab closed ("Don't Save" during a
   * generation): the server's edits to them are refused, because VS Code reopens every dirty
   * file in a tab. The server reaches them by a reload instead (`loom/documentChanged`).
   */
  readonly hidden = new Set<string>();

  constructor(readonly log: vscode.LogOutputChannel, readonly extensionVersion: string) {
    this.serverState = {
      phase: "stopped",
      extensionVersion,
      participant: serverSettings().participant ?? "human",
      restricted: !vscode.workspace.isTrusted,
    };
    this.disposables.push(this.documentChangedEmitter, this.statusEmitter, this.cleanEmitter, this.stateEmitter,
      this.treesChangedEmitter, this.exploringEmitter, this.inlineItemsEmitter, this.willApplyEditEmitter, this.didApplyEditEmitter,
      this.serverStateEmitter);
    this.disposables.push(
      // trusting the workspace may make its .venv/bin/loom and its settings usable
      vscode.workspace.onDidGrantWorkspaceTrust(() => {
        this.setServerState({ restricted: false });
        let next: ServerCommand | undefined;
        try {
          next = serverCommand();
        } catch {
          next = undefined;
        }
        const same = next && this.command && next.command === this.command.command && next.args.join("\0") === this.command.args.join("\0");
        if (!this.running || !same) void this.restart();
      }),
      vscode.workspace.onDidChangeConfiguration((e) => {
        if (!e.affectsConfiguration("loom")) return;
        if (e.affectsConfiguration("loom.server") || e.affectsConfiguration("loom.database") || e.affectsConfiguration("loom.participant")) {
          void this.restart();
        } else if (this.client?.state === State.Running) {
          void this.client.sendNotification(DidChangeConfigurationNotification.type, { settings: { loom: serverSettings() } });
        }
      }),
    );
  }

  private setServerState(change: Partial<ServerState>): void {
    this.serverState = { ...this.serverState, ...change };
    this.serverStateEmitter.fire(this.serverState);
  }

  private setPhase(phase: ServerPhase, error?: string): void {
    this.setServerState({ phase, error, participant: serverSettings().participant ?? "human" });
  }

  /**
   * The handshake: `<server> --version` against this extension's version, run beside the
   * start (it takes half a second); on a mismatch, a warning that says what to install.
   */
  private async checkServerVersion(cmd: ServerCommand): Promise<void> {
    const output = await serverVersionOutput(cmd, this.log);
    if (output === null) return;
    const where = describeServer(cmd);
    const check = checkVersion(this.extensionVersion, output, where);
    this.setServerState({ version: check.server, versionWarning: check.ok ? undefined : check.message, command: where });
    if (check.ok) {
      this.log.info(`server ${where}: loom ${check.server ?? "?"}, extension ${this.extensionVersion}`);
      return;
    }
    const message = check.message ?? "";
    this.log.warn(message);
    const key = `${where}\0${check.server ?? ""}`;
    if (this.versionWarned.has(key)) return;
    this.versionWarned.add(key);
    const pick = await vscode.window.showWarningMessage(message, "Show Logs", "Open Settings");
    if (pick === "Show Logs") this.log.show();
    else if (pick === "Open Settings") void vscode.commands.executeCommand("workbench.action.openSettings", "loom.server");
  }

  get running(): boolean {
    return this.client?.state === State.Running;
  }

  /** The running client, starting it on first use; undefined (after an error message) if it cannot start. */
  async ready(): Promise<LanguageClient | undefined> {
    if (this.client?.state === State.Running) return this.client;
    if (this.failed && !this.starting) return undefined;
    if (!this.starting) {
      this.starting = this.start().finally(() => {
        this.starting = undefined;
      });
    }
    return this.starting;
  }

  /** Like ready(), but throws (for callers that must fail: file reads). */
  async require(): Promise<LanguageClient> {
    const c = await this.ready();
    if (!c) throw new Error(this.lastError ?? "the Loom language server is not running");
    return c;
  }

  private async start(): Promise<LanguageClient | undefined> {
    let cmd: ServerCommand;
    this.setPhase("starting");
    try {
      cmd = serverCommand();
    } catch (err) {
      this.lastError = err instanceof Error ? err.message : String(err);
      this.log.appendLine(this.lastError);
      this.failed = true;
      this.setPhase("failed", this.lastError);
      if (err instanceof ServerNotFound) {
        void vscode.window.showErrorMessage(this.lastError, "Open Settings").then((pick) => {
          if (pick) void vscode.commands.executeCommand("workbench.action.openSettings", "loom.server");
        });
      }
      return undefined;
    }
    this.log.appendLine(`starting ${cmd.command} ${cmd.args.join(" ")} (from ${cmd.source}${vscode.workspace.isTrusted ? "" : "; Restricted Mode: nothing from the workspace is run"})`);
    this.setServerState({ version: undefined, versionWarning: undefined, command: describeServer(cmd) });
    void this.checkServerVersion(cmd);
    this.command = cmd;
    const serverOptions: ServerOptions = {
      command: cmd.command,
      args: cmd.args,
      // no `transport`: plain stdio, without the `--stdio` argument `loom serve` does not take
      options: { env: { ...process.env, PYTHONUNBUFFERED: "1" } },
    };
    const clientOptions: LanguageClientOptions = {
      documentSelector: [
        { scheme: SCHEME, language: "loom" },
        { scheme: SCHEME, language: "markdown" },
        // .loom files on disk, as Neovim attaches to them
        { scheme: "file", language: "loom" },
      ],
      initializationOptions: serverSettings(),
      outputChannel: this.log,
      progressOnInitialization: true,
      middleware: {
        workspace: {
          // an edit of a document without a tab would bring its tab back (see `hidden`)
          handleApplyEdit: async (params, next) => {
            const hidden = editedUris(params.edit).filter((u) => this.hidden.has(u));
            if (hidden.length) {
              this.log.appendLine(`edit refused: ${hidden.join(", ")} is shown in no tab`);
              return { applied: false, failureReason: "the document is shown in no tab" };
            }
            const event: ServerEditEvent = { edit: params.edit };
            this.willApplyEditEmitter.fire(event);
            let applied = false;
            try {
              const result = await next(params, CancellationToken.None);
              applied = !(result instanceof ResponseError) && result.applied;
              return result;
            } finally {
              this.didApplyEditEmitter.fire({ ...event, applied });
            }
          },
        },
        provideInlineCompletionItems: async (document, position, context, token, next) => {
          const result = await next(document, position, context, token);
          if (!token.isCancellationRequested) {
            const items = !result ? [] : Array.isArray(result) ? result : result.items;
            this.inlineItemsEmitter.fire({ uri: document.uri.toString(), version: document.version, items: offeredItems(items) });
          }
          return result;
        },
        didSave: (document, next) => {
          if (this.quietSaves.delete(document.uri.toString())) return Promise.resolve();
          return next(document);
        },
        // Commands the server puts on inlay hints and lenses that need a picker here.
        executeCommand: (command: string, args: unknown[], next: (command: string, args: unknown[]) => unknown): unknown => {
          const local = this.localCommands.get(command);
          return local ? local(args) : next(command, args);
        },
      },
    };
    const client = new LanguageClient(CLIENT_ID, "Loom", serverOptions, clientOptions);
    client.registerFeature(new NoTextDocumentContent(this.log));
    client.registerFeature(new ExplorationProgressCapability());
    this.clientDisposables.push(
      client.onNotification(Methods.documentChanged, (p: DocumentChangedNotification) => {
        this.documentChangedEmitter.fire(p);
      }),
      client.onNotification(Methods.status, (p: StatusNotification) => {
        this.statusEmitter.fire(p);
      }),
      client.onNotification(Methods.clean, (p: CleanNotification) => {
        this.cleanEmitter.fire(p);
      }),
      client.onNotification(Methods.treesChanged, (p: TreesChangedNotification) => {
        this.treesChangedEmitter.fire(p);
      }),
      client.onNotification(Methods.exploring, (p: ExploringNotification) => {
        this.exploringEmitter.fire(p);
      }),
      client.onDidChangeState((e) => {
        this.stateEmitter.fire(e.newState === State.Running ? "running" : "stopped");
        if (e.newState === State.Running) this.setPhase("running");
        else if (e.newState === State.Stopped && this.client === client) this.setPhase("stopped");
      }),
    );
    try {
      await client.start();
    } catch (err) {
      this.lastError = `The Loom language server (${cmd.command}) failed to start: ${err instanceof Error ? err.message : String(err)}`;
      this.log.appendLine(this.lastError);
      this.failed = true;
      for (const d of this.clientDisposables.splice(0)) d.dispose();
      this.setPhase("failed", this.lastError);
      void vscode.window.showErrorMessage(this.lastError, "Show Logs").then((pick) => {
        if (pick) this.log.show();
      });
      return undefined;
    }
    this.client = client;
    this.lastError = undefined;
    this.setPhase("running");
    return client;
  }

  async restart(): Promise<void> {
    this.failed = false;
    const old = this.client;
    this.client = undefined;
    for (const d of this.clientDisposables.splice(0)) d.dispose();
    if (old) {
      try {
        await old.stop(5000);
      } catch (err) {
        this.log.appendLine(`stopping the server: ${String(err)}`);
      }
    }
    await this.ready();
  }

  /** A custom request; a `{error: "✗ …"}` answer is thrown as an Error with that text. */
  async request<R>(method: string, params: unknown): Promise<R> {
    const result = await this.answer<R>(method, params);
    const error = errorOf(result);
    if (error) throw new Error(error);
    return result;
  }

  /** A custom request's answer as it is, a refusal included (`{ok: false, error, data}`: a save that asks first says what in its data). */
  async answer<R>(method: string, params: unknown): Promise<R> {
    const c = await this.require();
    return c.sendRequest<R>(method, params);
  }

  /** A notification to the server, if it runs. */
  notify(method: string, params: unknown): void {
    if (this.client?.state === State.Running) void this.client.sendNotification(method, params);
  }

  /** workspace/executeCommand with the server's one-object argument. */
  async execute<R = unknown>(command: string, args: object): Promise<R> {
    const c = await this.require();
    return (await c.sendRequest(ExecuteCommandRequest.type, { command, arguments: [args] })) as R;
  }

  async stop(): Promise<void> {
    const c = this.client;
    this.client = undefined;
    if (c) await c.stop(2000);
  }

  dispose(): void {
    for (const d of [...this.clientDisposables, ...this.disposables]) d.dispose();
    void this.stop();
  }
}
