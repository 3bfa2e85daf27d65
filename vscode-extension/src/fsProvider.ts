/**
 * `loom:` documents as files: readFile → `loom/read`, writeFile → `loom/save`. VS Code then
 * treats them like any file (dirty state, save, revert), and the language client syncs them
 * to the server like any other document.
 */

import * as vscode from "vscode";
import type { LoomClient } from "./client";
import { Methods, type ReadResult, type SaveChoice, type SaveQuestion, type SaveResult } from "./protocol";
import { choiceOf, questionToAsk, type SaveReason } from "./saveQuestion";
import { languageIdFor, parseLoomUri } from "./uris";

interface Entry {
  mtime: number;
  ctime: number;
  size: number;
  readOnly: boolean;
  languageId: string;
  text: string;
}

const encoder = new TextEncoder();

function saveReasonName(reason: vscode.TextDocumentSaveReason): SaveReason {
  switch (reason) {
    case vscode.TextDocumentSaveReason.AfterDelay:
      return "afterDelay";
    case vscode.TextDocumentSaveReason.FocusOut:
      return "focusOut";
    default:
      return "manual";
  }
}

/** The writer's answer to a save that asked first (a modal dialog; Cancel: no choice). */
async function askSave(ask: SaveQuestion): Promise<SaveChoice | undefined> {
  const titles = ask.choices.map((c) => c.title);
  return choiceOf(ask, await vscode.window.showWarningMessage(ask.question, { modal: true }, ...titles));
}

export class LoomFileSystem implements vscode.FileSystemProvider, vscode.Disposable {
  private readonly emitter = new vscode.EventEmitter<vscode.FileChangeEvent[]>();
  readonly onDidChangeFile = this.emitter.event;
  private readonly entries = new Map<string, Entry>();
  private readonly watched = new Map<string, number>();
  private clock = 0;
  /** Why each document is being saved (from onWillSaveTextDocument), sent with loom/save. */
  private readonly saveReasons = new Map<string, SaveReason>();
  private readonly disposables: vscode.Disposable[] = [];

  constructor(private readonly client: LoomClient) {
    this.disposables.push(
      this.emitter,
      client.onDocumentChanged((p) => {
        this.changedOnServer(p.uri);
      }),
    );
  }

  /** Strictly increasing times, so VS Code always sees a change as newer. */
  private now(): number {
    this.clock = Math.max(this.clock + 1, Date.now());
    return this.clock;
  }

  /** Documents about to be saved because the server said they hold nothing uncommitted. */
  private readonly synced = new Set<string>();

  /**
   * The next save of `uri` only records it as saved: the server has just said the text
   * is exactly what the tree holds (`loom/clean`), so there is nothing to send.
   */
  markSynced(uri: vscode.Uri): void {
    this.synced.add(uri.toString());
  }

  /** The save markSynced was for is over (or never wrote): the next save is the user's again. */
  clearSynced(uri: vscode.Uri): void {
    this.synced.delete(uri.toString());
  }

  /** Remember why a document is about to be saved: the server runs command lines on a manual save only. */
  noteSaveReason(uri: vscode.Uri, reason: vscode.TextDocumentSaveReason): void {
    this.saveReasons.set(uri.toString(), saveReasonName(reason));
  }

  /** The language a loom: document should have (from the last read, else from its URI). */
  languageOf(uri: vscode.Uri): string | undefined {
    return this.entries.get(uri.toString())?.languageId ?? languageIdFor(uri.toString());
  }

  isReadOnly(uri: vscode.Uri): boolean {
    return this.entries.get(uri.toString())?.readOnly ?? false;
  }

  /**
   * Record a read. The mtime only moves when VS Code must reload (a change on the server
   * that it is told about) or after a save: the buffer's unsaved text, which the server
   * also returns for open documents, must not make a later save look like a conflict.
   */
  private remember(uri: vscode.Uri, r: ReadResult, bump = false): Entry {
    const key = uri.toString();
    const old = this.entries.get(key);
    const entry: Entry = {
      mtime: !old || (bump && old.text !== r.text) ? this.now() : old.mtime,
      ctime: old?.ctime ?? this.now(),
      size: encoder.encode(r.text).byteLength,
      readOnly: r.readOnly,
      languageId: r.languageId || languageIdFor(key) || "loom",
      text: r.text,
    };
    this.entries.set(key, entry);
    return entry;
  }

  private async read(uri: vscode.Uri, bump = false): Promise<Entry> {
    if (!parseLoomUri(uri.toString())) throw vscode.FileSystemError.FileNotFound(uri);
    let r: ReadResult;
    try {
      r = await this.client.request<ReadResult>(Methods.read, { uri: uri.toString() });
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      if (/NOT_FOUND|not found|does not exist|unknown/i.test(message)) throw vscode.FileSystemError.FileNotFound(`${uri.toString()}: ${message}`);
      throw new vscode.FileSystemError(`${uri.toString()}: ${message}`);
    }
    return this.remember(uri, r, bump);
  }

  /**
   * The server says a document changed elsewhere. Writable documents open in an editor get
   * the change as a workspace edit from the server (unsaved text is kept), so only
   * read-only ones, ones not open, and ones open in no tab (`LoomClient.hidden`: an edit
   * would reopen their tab) are reloaded; VS Code reloads a document that is not dirty.
   */
  private changedOnServer(uriString: string): void {
    let uri: vscode.Uri;
    try {
      uri = vscode.Uri.parse(uriString, true);
    } catch {
      return;
    }
    const key = uri.toString();
    const entry = this.entries.get(key);
    if (!entry) return;
    const open = vscode.workspace.textDocuments.some((d) => d.uri.toString() === key);
    if (open && !entry.readOnly && !this.client.hidden.has(key)) return;
    void this.read(uri, true).then(
      (e) => {
        if (e.mtime === entry.mtime) return;
        this.emitter.fire([{ type: vscode.FileChangeType.Changed, uri }]);
      },
      () => {
        this.entries.delete(key);
        this.emitter.fire([{ type: vscode.FileChangeType.Deleted, uri }]);
      },
    );
  }

  watch(uri: vscode.Uri): vscode.Disposable {
    const key = uri.toString();
    this.watched.set(key, (this.watched.get(key) ?? 0) + 1);
    return new vscode.Disposable(() => {
      const n = (this.watched.get(key) ?? 1) - 1;
      if (n <= 0) this.watched.delete(key);
      else this.watched.set(key, n);
    });
  }

  async stat(uri: vscode.Uri): Promise<vscode.FileStat> {
    const key = uri.toString();
    const cached = this.entries.get(key);
    const e = cached ?? (await this.read(uri));
    const stat: vscode.FileStat = { type: vscode.FileType.File, ctime: e.ctime, mtime: e.mtime, size: e.size };
    if (e.readOnly) stat.permissions = vscode.FilePermission.Readonly;
    return stat;
  }

  async readFile(uri: vscode.Uri): Promise<Uint8Array> {
    const e = await this.read(uri);
    return encoder.encode(e.text);
  }

  async writeFile(uri: vscode.Uri, content: Uint8Array): Promise<void> {
    const key = uri.toString();
    if (!parseLoomUri(key)) throw vscode.FileSystemError.NoPermissions("loom: documents are created with Loom: New Tree");
    const existing = this.entries.get(key);
    if (existing?.readOnly) throw vscode.FileSystemError.NoPermissions(`${key} is read-only`);
    const text = new TextDecoder().decode(content);
    if (this.synced.delete(key)) {
      this.saveReasons.delete(key);
      this.client.quietSaves.add(key);
      this.entries.set(key, {
        mtime: this.now(),
        ctime: existing?.ctime ?? this.now(),
        size: encoder.encode(text).byteLength,
        readOnly: false,
        languageId: existing?.languageId ?? languageIdFor(key) ?? "loom",
        text,
      });
      return;
    }
    const reason = this.saveReasons.get(key);
    this.saveReasons.delete(key);
    let r = await this.save({ uri: key, text, ...(reason ? { reason } : {}) });
    if (!r.ok && r.data?.confirm) {
      const ask = questionToAsk(r, reason);
      const choice = ask ? await askSave(ask) : undefined;
      if (!choice) {
        throw new vscode.FileSystemError(`${r.message.split("\n")[0]} (undo brings the text back)`);
      }
      r = await this.save({ uri: key, text, confirm: choice, ...(reason ? { reason } : {}) });
    }
    if (!r.ok) {
      // `✗ CODE: message` (and a hint): shown by VS Code as "Failed to save …: <message>".
      throw new vscode.FileSystemError(r.message || "✗ the server refused the save");
    }
    if (r.message) void vscode.window.setStatusBarMessage(`Loom: ${r.message.split("\n")[0]}`, 4000);
    const size = encoder.encode(text).byteLength;
    this.entries.set(key, {
      mtime: this.now(),
      ctime: existing?.ctime ?? this.now(),
      size,
      readOnly: false,
      languageId: existing?.languageId ?? languageIdFor(key) ?? "loom",
      text,
    });
  }

  private async save(params: Record<string, unknown>): Promise<SaveResult> {
    try {
      return await this.client.answer<SaveResult>(Methods.save, params);
    } catch (err) {
      throw new vscode.FileSystemError(err instanceof Error ? err.message : String(err));
    }
  }

  readDirectory(): [string, vscode.FileType][] {
    return [];
  }

  createDirectory(uri: vscode.Uri): void {
    throw vscode.FileSystemError.NoPermissions(uri);
  }

  delete(uri: vscode.Uri): void {
    throw vscode.FileSystemError.NoPermissions(uri);
  }

  rename(oldUri: vscode.Uri): void {
    throw vscode.FileSystemError.NoPermissions(oldUri);
  }

  dispose(): void {
    for (const d of this.disposables) d.dispose();
  }
}
