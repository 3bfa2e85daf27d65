/**
 * A save that would take away most of the path asks the writer first (issue 47): the
 * server answers `{ok: false, data: {confirm}}` and nothing is written until the editor
 * saves again with the writer's choice. Pure: the dialog itself is in fsProvider.ts.
 */

import type { SaveChoice, SaveQuestion, SaveResult } from "./protocol";

export type SaveReason = "manual" | "afterDelay" | "focusOut";

/** The question to put to the writer, or undefined: none asked, or an autosave (which never answers for the writer: the document stays unsaved). */
export function questionToAsk(r: SaveResult, reason: SaveReason | undefined): SaveQuestion | undefined {
  if (r.ok || !r.data?.confirm) return undefined;
  if (reason === "afterDelay" || reason === "focusOut") return undefined;
  return r.data.confirm;
}

/** The choice a button title stands for (undefined: Cancel, or the dialog closed). */
export function choiceOf(ask: SaveQuestion, picked: string | undefined): SaveChoice | undefined {
  return ask.choices.find((c) => c.title === picked)?.choice;
}
