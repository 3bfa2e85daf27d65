/** How to start `loom serve`: pure resolution from settings and a view of the file system. */

import * as path from "node:path";

export interface ServerConfig {
  serverPath: string;
  python: string;
  database: string;
}

export interface Probe {
  /** Whether an executable file exists at this absolute path. */
  isExecutable(file: string): boolean;
  /** The directories of PATH. */
  pathDirs: string[];
  /** Candidate workspace folders (a `.venv/bin/loom` there is found too, when trusted). */
  workspaceDirs: string[];
  platform: NodeJS.Platform;
  /**
   * Whether the workspace is trusted. In Restricted Mode nothing the workspace brings is
   * run: not its `.venv/bin/loom`, nor a `loom` found through a relative PATH entry.
   */
  trusted: boolean;
}

export interface ServerCommand {
  command: string;
  args: string[];
  /** The arguments that print the server's version instead (`loom --version`). */
  versionArgs: string[];
  /** Where the executable came from, for the log. */
  source: "loom.server.path" | "loom.server.python" | "PATH" | "workspace venv";
}

/** The command as a person would type it (`/v/bin/python -m loom.cli`), for messages. */
export function describeServer(cmd: ServerCommand): string {
  return [cmd.command, ...cmd.versionArgs.slice(0, -1)].join(" ");
}

export const INSTALL_HINT =
  "Install it with `pipx install loom-lsp` (or `pip install loom-lsp`), then set `loom.server.path` " +
  "to the `loom` executable if it is not on PATH (or `loom.server.python` to the Python it was installed into).";

export class ServerNotFound extends Error {
  constructor(message: string) {
    super(`${message} ${INSTALL_HINT}`);
    this.name = "ServerNotFound";
  }
}

function expandHome(p: string, home: string | undefined): string {
  if (home && (p === "~" || p.startsWith("~/"))) return path.join(home, p.slice(1));
  return p;
}

function findOnPath(name: string, probe: Probe): string | undefined {
  const exts = probe.platform === "win32" ? [".exe", ".cmd", ""] : [""];
  for (const dir of probe.pathDirs) {
    // an empty or relative entry means the current directory: the workspace's, perhaps
    if (!dir || (!probe.trusted && !path.isAbsolute(dir))) continue;
    for (const ext of exts) {
      const candidate = path.join(dir, name + ext);
      if (probe.isExecutable(candidate)) return candidate;
    }
  }
  return undefined;
}

/** The command line of the server: `loom [--db DB] serve` or `python -m loom.cli [--db DB] serve`. */
export function resolveServerCommand(cfg: ServerConfig, probe: Probe, home?: string): ServerCommand {
  const db = cfg.database.trim() ? ["--db", expandHome(cfg.database.trim(), home)] : [];
  const serverPath = cfg.serverPath.trim();
  if (serverPath) {
    const p = expandHome(serverPath, home);
    const resolved = path.isAbsolute(p) ? (probe.isExecutable(p) ? p : undefined) : findOnPath(p, probe);
    if (!resolved) throw new ServerNotFound(`loom.server.path is set to "${serverPath}", but no executable is there.`);
    return { command: resolved, args: [...db, "serve"], versionArgs: ["--version"], source: "loom.server.path" };
  }
  const python = cfg.python.trim();
  if (python) {
    const p = expandHome(python, home);
    const resolved = path.isAbsolute(p) ? (probe.isExecutable(p) ? p : undefined) : findOnPath(p, probe);
    if (!resolved) throw new ServerNotFound(`loom.server.python is set to "${python}", but no executable is there.`);
    return { command: resolved, args: ["-m", "loom.cli", ...db, "serve"], versionArgs: ["-m", "loom.cli", "--version"], source: "loom.server.python" };
  }
  const onPath = findOnPath("loom", probe);
  if (onPath) return { command: onPath, args: [...db, "serve"], versionArgs: ["--version"], source: "PATH" };
  const bin = probe.platform === "win32" ? path.join(".venv", "Scripts", "loom.exe") : path.join(".venv", "bin", "loom");
  for (const dir of probe.workspaceDirs) {
    const candidate = path.join(dir, bin);
    if (!probe.isExecutable(candidate)) continue;
    if (!probe.trusted) {
      throw new ServerNotFound(
        `The Loom language server (\`loom\`) was not found outside the workspace, and its ${candidate} is not run in Restricted Mode: trust the workspace (Manage Workspace Trust) to use it.`,
      );
    }
    return { command: candidate, args: [...db, "serve"], versionArgs: ["--version"], source: "workspace venv" };
  }
  throw new ServerNotFound("The Loom language server (`loom`) was not found.");
}
