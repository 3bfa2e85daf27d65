/**
 * The version handshake, pure: what `loom --version` printed, compared with the extension's
 * own version. Extension and server are released together and agree on major.minor (the
 * custom protocol in protocol.ts changes between minors); a patch may differ. A server too
 * old to have `--version` (it predates 0.1) gets the same warning.
 */

export interface VersionCheck {
  /** The server's version, when it said one. */
  server?: string;
  /** Whether the two agree on major.minor. */
  ok: boolean;
  /** For the user when they do not: the two versions and what to do. */
  message?: string;
}

/** `loom 0.1.0 (Python 3.11.7, /path)` → `0.1.0`; undefined if the output names no version. */
export function parseServerVersion(output: string): string | undefined {
  const m = /^loom (\d+\.\d+\.\d+(?:[-.+]?[0-9A-Za-z.+-]*)?)/m.exec(output);
  return m?.[1];
}

function majorMinor(version: string): [number, number] | undefined {
  const m = /^(\d+)\.(\d+)/.exec(version);
  return m ? [Number(m[1]), Number(m[2])] : undefined;
}

/** `pip install` pins that give a server of the extension's major.minor. */
export function installHint(extension: string, executable: string): string {
  const mm = majorMinor(extension);
  const spec = mm ? `loom-lsp==${mm[0]}.${mm[1]}.*` : "loom-lsp";
  // plain text: VS Code shows notification messages as they are, backticks included
  return `Install a matching server: pipx install --force '${spec}', or pip install -U '${spec}' in the environment of ${executable}.`;
}

/**
 * Compare the server's `--version` output with the extension's version.
 * `output` is undefined when `--version` failed (a server older than the handshake).
 */
export function checkVersion(extension: string, output: string | undefined, executable: string): VersionCheck {
  const server = output === undefined ? undefined : parseServerVersion(output);
  if (server === undefined) {
    return {
      ok: false,
      message: `The Loom server at ${executable} does not report its version (loom --version): it is older than this extension (${extension}) expects, and some features may fail. ${installHint(extension, executable)}`,
    };
  }
  const a = majorMinor(extension);
  const b = majorMinor(server);
  if (a && b && a[0] === b[0] && a[1] === b[1]) return { server, ok: true };
  const older = a && b && (b[0] < a[0] || (b[0] === a[0] && b[1] < a[1]));
  const todo = older
    ? installHint(extension, executable)
    : `Update the Loom extension to ${b ? `${b[0]}.${b[1]}` : server} (Extensions view), or ${installHint(extension, executable).replace(/^Install/, "install")}`;
  return {
    server,
    ok: false,
    message: `The Loom server is ${server} but this extension is ${extension}: their major.minor versions differ, so some features may fail. ${todo}`,
  };
}
