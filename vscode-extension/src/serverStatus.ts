/** What the language status item says about the server: pure, from the client's state. */

export type ServerPhase = "starting" | "running" | "stopped" | "failed";

export interface ServerState {
  phase: ServerPhase;
  /** The server's version (`loom --version`), once known. */
  version?: string;
  /** The extension's version and, when they differ in major.minor, the warning shown. */
  extensionVersion: string;
  versionWarning?: string;
  participant: string;
  /** The executable, as the log names it. */
  command?: string;
  /** Why it is not running. */
  error?: string;
  /** Restricted Mode (an untrusted workspace). */
  restricted: boolean;
}

export interface LanguageStatusView {
  text: string;
  detail: string;
  severity: "information" | "warning" | "error";
  busy: boolean;
}

function firstSentence(text: string): string {
  const m = /^(.*?[.:])(\s|$)/.exec(text);
  const s = (m ? m[1] : text).replace(/[.:]$/, "");
  return s.length > 80 ? `${s.slice(0, 79)}…` : s;
}

export function languageStatusView(s: ServerState): LanguageStatusView {
  const restricted = s.restricted ? " · Restricted Mode" : "";
  switch (s.phase) {
    case "starting":
      return { text: "Loom starting", detail: `as ${s.participant}${restricted}`, severity: "information", busy: true };
    case "failed":
      return {
        text: "$(error) Loom not running",
        detail: `${s.error ? firstSentence(s.error) : "the server could not start"}${restricted}`,
        severity: "error",
        busy: false,
      };
    case "stopped":
      return { text: "$(debug-stop) Loom stopped", detail: `Loom: Restart Server starts it${restricted}`, severity: "warning", busy: false };
    case "running": {
      const version = s.version ? ` ${s.version}` : "";
      if (s.versionWarning) {
        const server = s.version ? `server ${s.version}` : "a server without --version";
        return {
          text: `$(warning) Loom${version}`,
          detail: `${server}, extension ${s.extensionVersion} · as ${s.participant}${restricted}`,
          severity: "warning",
          busy: false,
        };
      }
      return { text: `Loom${version}`, detail: `as ${s.participant}${restricted}`, severity: "information", busy: false };
    }
  }
}
