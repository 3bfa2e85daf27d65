/** The model picker's rows: the models `continue` can ask, then the sampler presets of
 * config.toml (`[presets.NAME]`) it can sample with in the tree. Pure, for its tests. */

import type { ModelsResult } from "./protocol";

export interface PickerRow {
  label: string;
  description?: string;
  detail?: string;
  /** "separator" rows only divide the list. */
  kind: "model" | "preset" | "separator";
  /** The model to pick (undefined: the default again). */
  profile?: string;
  /** The preset to pick ("": none again). */
  preset?: string;
}

export function pickerRows(data: ModelsResult): PickerRow[] {
  const rows: PickerRow[] = data.models.map((m) => ({
    kind: "model" as const,
    label: `${m.name === data.current ? "$(check) " : ""}${m.name}`,
    description: m.description,
    detail: [m.default ? "the default" : "", m.ready ? "" : "no API key set"].filter(Boolean).join(" · ") || undefined,
    profile: m.default ? undefined : m.name,
  }));
  const presets = data.presets ?? [];
  if (presets.length === 0) return rows;
  rows.push({ kind: "separator", label: "sampler presets (config.toml)" });
  for (const p of presets) {
    rows.push({ kind: "preset", label: `${p.name === data.preset ? "$(check) " : ""}preset: ${p.name}`, description: p.description, preset: p.name });
  }
  if (data.preset) rows.push({ kind: "preset", label: "no preset", description: "the model's own defaults", preset: "" });
  return rows;
}

/** What the status bar item says: the model, and the preset when one is picked. */
export function pickerText(data: ModelsResult): string {
  return data.preset ? `${data.current} · ${data.preset}` : `${data.current}`;
}
