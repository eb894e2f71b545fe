// Edited cells checked against attnkit: one typed into the editor, or those a link holds.
import { $ } from "./dom";
import { computeModel, type Model } from "./model";
import { page } from "./page";
import { cellName, type State } from "./state";

/** Computes the whole model for `s` (every result a scene may ask for); throws what attnkit throws. */
export function trialModel(s: State): Model {
  const m = computeModel(page.attn, s, page.model);
  for (const it of m.items) void [it.rowSums, it.out, it.checkDiff, it.batched];
  return m;
}

export const errorText = (err: unknown) => (err instanceof Error ? err.message : String(err));

/** Drops the URL's edited cells attnkit cannot compute with, one by one, saying why in urlDropped. */
export function dropFailingEdits(): void {
  const state = page.state;
  const entries = Object.entries(state.edits);
  if (!entries.length) return;
  const kept: Record<string, number> = {};
  for (const [k, v] of entries) {
    try {
      trialModel({ ...state, edits: { ...kept, [k]: v } });
      kept[k] = v;
    } catch (err) {
      page.urlDropped.push(
        `${cellName(k)} = ${v}: attnkit cannot compute with it (${errorText(err)})`,
      );
    }
  }
  state.edits = kept;
}

export function showUrlNote(): void {
  const note = $("url-note");
  const urlDropped = page.urlDropped;
  if (!urlDropped.length) return;
  note.querySelector("span")!.textContent =
    `This link held values the page cannot use as they are, so the address now holds the values used. ${urlDropped.map((d) => d.replace(/\.$/, "")).join("; ")}.`;
  note.hidden = false;
}
