// The settings panel: reads the state into the form and turns form events into state patches.
import { resolveConfig, type Config, type ShapeField } from "./config";
import { PRESETS, presetById } from "./presets";
import { DEFAULT_STATE, DISPLAY_FIELDS, NUMBER_RANGE, SHORT, rangeText, type State } from "./state";
import { syncTrainedBanner, trainedBy, trainedOf } from "./trained";
import { headNames } from "./weights";

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;

type Set = (patch: Partial<State>, opts?: { animate?: boolean }) => void;

/** The state a preset selects (its fields on top of the defaults for inputs). */
export function presetState(id: string, s: State): Partial<State> {
  const p = presetById(id);
  if (!p) return { preset: "custom" };
  return {
    preset: p.id,
    text: p.text,
    text2: p.text2 ?? s.text2,
    batch: false,
    custom: "",
    edits: {},
    query: 1,
    head: 0,
    decodeStep: 0,
    emb: DEFAULT_STATE.emb,
    ...p.set,
  };
}

const SHAPE_FIELDS: readonly ShapeField[] = ["dModel", "dK", "dV", "heads", "kvHeads"];

/** Whether the other settings of `s` let field `f` be set (else it is fixed and its value waits). */
function isFree(s: State, f: ShapeField): boolean {
  if (f === "heads") return true;
  if (f === "dModel") return s.emb === "random" && s.weights !== "seed";
  return s.weights === "random";
}

/**
 * The shape fields of `s` that its other settings cannot use as they are (heads must
 * divide d_model, a number out of range, ...): the values used, and why ("3 → 2: heads
 * must divide d_model = 16"). The state then holds what the page uses and shows, so
 * its URL does too, and a note is about the entry that caused it.
 */
export function settleShapes(s: State): {
  patch: Partial<State>;
  why: Partial<Record<ShapeField, string>>;
} {
  const patch: Partial<State> = {};
  const why: Partial<Record<ShapeField, string>> = {};
  if (s.weights === "trained") return { patch, why };
  const cfg = resolveConfig(s);
  for (const f of SHAPE_FIELDS) {
    if (isFree(s, f) && cfg[f] !== s[f]) {
      patch[f] = cfg[f];
      why[f] = cfg.adjusted[f] ?? "";
    }
  }
  return { patch, why };
}

/**
 * A state read from a link (`query`), with the values the page uses: shapes settled, the
 * query, head and decoding position within the text and heads. Says why in `dropped`.
 */
export function settleLink(s: State, dropped: string[], query: string): State {
  const { patch, why } = settleShapes(s);
  for (const f of SHAPE_FIELDS) if (f in why) dropped.push(`${SHORT[f]}=${why[f]}`);
  const settled = { ...s, ...patch };
  if (settled.weights === "trained") return settled;
  const cfg = resolveConfig(settled);
  // A shape the other settings fix (designed weights fix d_k) keeps the value a field
  // last had, waiting for the settings that free it; but a link's value that already got
  // a note (out of range) is not waiting for anything: the note and the address give the
  // value used.
  const link = new URLSearchParams(query);
  for (const f of SHAPE_FIELDS) {
    const raw = link.get(SHORT[f]);
    if (raw === null || isFree(settled, f) || cfg[f] === settled[f]) continue;
    const at = dropped.findIndex(
      (d) => d.startsWith(`${SHORT[f]}=${raw}:`) || d.startsWith(`${SHORT[f]}=${raw} →`),
    );
    if (at < 0) continue;
    const reason =
      f === "dModel"
        ? (cfg.adjusted.dModel ?? "").replace(/^fixed: /, "")
        : cfg.fixedHint.replace(/\.$/, "");
    dropped[at] =
      `${SHORT[f]}=${raw} → ${cfg[f]}: ${reason.charAt(0).toLowerCase()}${reason.slice(1)}`;
    settled[f] = cfg[f];
  }
  const bound = (key: "query" | "head" | "decodeStep", hi: number, what: string) => {
    if (settled[key] <= hi) return;
    dropped.push(`${SHORT[key]}=${settled[key]} → ${hi}: ${what}`);
    settled[key] = hi;
  };
  bound("query", cfg.T - 1, `the text has ${cfg.T} tokens, 0 to ${cfg.T - 1}`);
  bound("head", cfg.heads - 1, `there are ${cfg.heads} heads, 0 to ${cfg.heads - 1}`);
  bound("decodeStep", cfg.T, `the text has ${cfg.T} tokens to decode`);
  return settled;
}

/**
 * Why a number field's value is not the one last typed (shown next to it). Each change
 * of the settings writes them anew, and typing in a field clears its own, so a note
 * always speaks of the value the field shows.
 */
let fieldNotes: Record<string, string> = {};

/** Applies a change of the settings with the shapes settled; `notes`: a number field's own. */
type Commit = (
  patch: Partial<State>,
  opts?: { animate?: boolean },
  notes?: Record<string, string>,
) => void;

export function bindControls(get: () => State, setState: Set): void {
  const commit: Commit = (patch, opts, notes = {}) => {
    const shown = Object.keys(patch).every((k) => DISPLAY_FIELDS.includes(k as keyof State));
    if (shown && !Object.keys(notes).length) return setState(patch, opts);
    const settled = settleShapes({ ...get(), ...patch });
    fieldNotes = { ...settled.why, ...notes };
    setState({ ...patch, ...settled.patch }, opts);
  };
  const set: Set = (patch, opts) => commit(patch, opts);
  bindPresetAndText(get, set);
  bindModelChoices(get, set);
  for (const [id, key] of NUMBER_FIELDS) bindNumberField(id, key, get, commit);
  bindWeightButtons(get, set);
  bindViewChoices(set);
}

/** The preset select and the two texts: typing a text makes the preset "custom". */
function bindPresetAndText(get: () => State, set: Set): void {
  const preset = $<HTMLSelectElement>("preset");
  preset.innerHTML =
    PRESETS.map((p) => `<option value="${p.id}">${p.label}</option>`).join("") +
    `<option value="custom">custom text</option>`;
  preset.addEventListener("change", () => set(presetState(preset.value, get()), { animate: true }));
  $<HTMLTextAreaElement>("text").addEventListener("input", (e) => {
    const s = get();
    const patch: Partial<State> = {
      text: (e.target as HTMLTextAreaElement).value,
      preset: "custom",
      custom: "",
    };
    if (s.weights === "seed") patch.weights = "identity";
    set(patch);
  });
  $<HTMLTextAreaElement>("text2").addEventListener("input", (e) =>
    set({ text2: (e.target as HTMLTextAreaElement).value, custom: "" }),
  );
}

/** The check boxes, the embedding and the weights: each choice leaves the others consistent. */
function bindModelChoices(get: () => State, set: Set): void {
  const checks: [string, keyof State][] = [
    ["batch", "batch"],
    ["pe", "pe"],
    ["scaling", "scaling"],
  ];
  for (const [id, key] of checks) {
    $<HTMLInputElement>(id).addEventListener("change", (e) =>
      set({ [key]: (e.target as HTMLInputElement).checked, custom: "" } as Partial<State>),
    );
  }
  $<HTMLSelectElement>("emb").addEventListener("change", (e) => {
    const emb = (e.target as HTMLSelectElement).value as State["emb"];
    const s = get();
    set({
      emb,
      edits: {},
      weights:
        s.weights === "designed" && emb === "random"
          ? "random"
          : s.weights === "seed"
            ? "identity"
            : s.weights,
    });
  });
  $<HTMLSelectElement>("weights").addEventListener("change", (e) => {
    const w = (e.target as HTMLSelectElement).value as State["weights"];
    if (w === "seed") set(presetState("seed001", get()));
    else
      set({
        weights: w,
        edits: {},
        emb: w === "designed" ? "features" : get().emb,
        preset: get().weights === "seed" ? "custom" : get().preset,
      });
  });
}

/** The number fields: their element ids and the state fields they set. */
const NUMBER_FIELDS: [string, keyof State][] = [
  ["dModel", "dModel"],
  ["seed", "seed"],
  ["dK", "dK"],
  ["dV", "dV"],
  ["heads", "heads"],
  ["kvHeads", "kvHeads"],
];

/** Number field `id`: typing clears its note; a change commits the value, or keeps the old one with a note why. */
function bindNumberField(id: string, key: keyof State, get: () => State, commit: Commit): void {
  const field = $<HTMLInputElement>(id);
  field.addEventListener("input", () => {
    if (!fieldNotes[id]) return;
    delete fieldNotes[id];
    $(`adj-${id}`).textContent = "";
  });
  field.addEventListener("change", () => {
    // The field then shows the value used, even while it keeps the focus.
    field.dataset.commit = "1";
    // A number field holds "" for what is not a number; a huge one parses to Infinity.
    const raw = field.value.trim();
    const [lo, hi, whole] = NUMBER_RANGE[key]!;
    const range = rangeText(lo, hi, whole);
    const v = Number(raw);
    if (raw === "" || !Number.isFinite(v)) {
      const what =
        raw === "" ? "Empty or not a number" : `${raw} is beyond any number the page uses`;
      commit({}, undefined, { [id]: `${what}: type ${range}. Kept ${get()[key]}.` });
      return;
    }
    const notes: Record<string, string> = {};
    let used = v;
    if (key === "seed") {
      used = Math.min(hi, Math.max(lo, Math.round(v)));
      if (used !== v) notes[id] = `${v} → ${used}: ${range}`;
    }
    const patch = { [key]: used, edits: {} } as Partial<State>;
    // kv heads equal to heads follow the heads used.
    if (key === "heads" && get().kvHeads === get().heads)
      patch.kvHeads = settleShapes({ ...get(), heads: used }).patch.heads ?? used;
    commit(patch, undefined, notes);
  });
}

/** Reroll (the next seed, back to the first past the last a link may hold) and Reset edits. */
function bindWeightButtons(get: () => State, set: Set): void {
  const [firstSeed, lastSeed] = NUMBER_RANGE.seed!;
  $<HTMLButtonElement>("reroll").addEventListener("click", () =>
    set({
      seed: get().seed >= lastSeed ? firstSeed : get().seed + 1,
      weights:
        get().weights === "seed"
          ? "random"
          : get().weights === "identity"
            ? "random"
            : get().weights,
      edits: {},
    }),
  );
  $<HTMLButtonElement>("reset-edits").addEventListener("click", () => set({ edits: {} }));
}

/** Mask, temperature, soft cap, the query and head shown, the animation speed. */
function bindViewChoices(set: Set): void {
  $<HTMLSelectElement>("mask").addEventListener("change", (e) =>
    set({ mask: (e.target as HTMLSelectElement).value as State["mask"] }),
  );
  $<HTMLInputElement>("temperature").addEventListener("input", (e) =>
    set({ temperature: Number((e.target as HTMLInputElement).value) }),
  );
  $<HTMLInputElement>("softcap").addEventListener("input", (e) =>
    set({ softcap: Number((e.target as HTMLInputElement).value) }),
  );
  $<HTMLSelectElement>("query").addEventListener("change", (e) =>
    set({ query: Number((e.target as HTMLSelectElement).value) }, { animate: true }),
  );
  $<HTMLSelectElement>("head").addEventListener("change", (e) =>
    set({ head: Number((e.target as HTMLSelectElement).value) }, { animate: true }),
  );
  $<HTMLSelectElement>("speed").addEventListener("change", (e) =>
    set({ speed: Number((e.target as HTMLSelectElement).value) }),
  );
}

// Every write below happens only when the value changes: an unchanged write still
// invalidates style and layout (a <select> of 64 options re-measures them all).

/** Writes a field's value; not while it has the focus (it is being typed in) unless it was just committed. */
function setValue(id: string, v: string): void {
  const el = $<HTMLInputElement>(id);
  const committed = el.dataset.commit === "1";
  delete el.dataset.commit;
  if (el.value !== v && (document.activeElement !== el || committed)) el.value = v;
}

function setText(id: string, text: string): void {
  const el = $(id);
  if (el.textContent !== text) el.textContent = text;
}

function setFlag(id: string, key: "checked" | "disabled" | "hidden", on: boolean): void {
  const el = $<HTMLInputElement>(id);
  if (el[key] !== on) el[key] = on;
}

/** Adds or removes the option `value` of a select (trained mode's entries exist only in trained mode). */
function toggleOption(id: string, value: string, label: string, on: boolean): void {
  const sel = $<HTMLSelectElement>(id);
  const opt = sel.querySelector(`option[value="${value}"]`);
  if (on && !opt) sel.add(new Option(label, value));
  else if (on && opt && opt.textContent !== label) opt.textContent = label;
  else if (!on && opt) opt.remove();
}

/** The controls whose values the trained numbers fix (disabled in trained mode; the banner says why). */
const FIXED_WHEN_TRAINED = [
  "preset",
  "text",
  "batch",
  "emb",
  "dModel",
  "pe",
  "weights",
  "seed",
  "reroll",
  "dK",
  "dV",
  "heads",
  "kvHeads",
  "mask",
  "scaling",
  "temperature",
  "softcap",
] as const;
/** Of those, the ones no other setting disables. */
const ENABLED_OTHERWISE = FIXED_WHEN_TRAINED.filter(
  (id) => !["batch", "emb", "dModel", "dK", "dV", "kvHeads"].includes(id),
);

function options(sel: HTMLSelectElement, items: string[], value: number): void {
  const html = items.map((t, i) => `<option value="${i}">${t}</option>`).join("");
  if (sel.dataset.html !== html) {
    sel.innerHTML = html;
    sel.dataset.html = html;
  }
  if (sel.value !== String(value)) sel.value = String(value);
}

export function syncControls(s: State, cfg: Config): void {
  const trained = s.weights === "trained";
  toggleOption("preset", "trained", "trained model", trained);
  const shown = trainedOf(s);
  toggleOption(
    "weights",
    "trained",
    `trained model (${shown ? trainedBy(shown) : "Train view"})`,
    trained,
  );
  toggleOption("emb", "trained", "the trained model's X", trained);
  setValue("preset", s.preset);
  setValue("text", cfg.seedMode ? cfg.items[0].tokens.join(" ") : s.text);
  setValue("text2", s.text2);
  setFlag("batch", "checked", s.batch);
  setFlag("batch", "disabled", cfg.seedMode);
  setFlag("text2-label", "hidden", !s.batch || cfg.seedMode);
  setValue("emb", trained ? "trained" : s.emb);
  setFlag("emb", "disabled", cfg.seedMode);
  setValue("dModel", String(cfg.dModel));
  setFlag("dModel", "disabled", s.emb !== "random" || cfg.seedMode);
  setFlag("pe", "checked", s.pe);
  setValue("weights", s.weights);
  setValue("seed", String(s.seed));
  setValue("dK", String(cfg.dK));
  setValue("dV", String(cfg.dV));
  setValue("heads", String(cfg.heads));
  setValue("kvHeads", String(cfg.kvHeads));
  for (const id of ["dK", "dV", "kvHeads"]) setFlag(id, "disabled", s.weights !== "random");
  for (const id of ["dModel", "dK", "dV", "heads", "kvHeads"] as const)
    setText(`adj-${id}`, fieldNotes[id] || (cfg.adjusted[id] ?? ""));
  setText("adj-seed", fieldNotes.seed ?? "");
  setText("shape-hint", cfg.fixedHint);
  setValue("mask", s.mask);
  setFlag("scaling", "checked", s.scaling);
  setValue("temperature", String(s.temperature));
  setText("temp-out", s.temperature.toFixed(2));
  setValue("softcap", String(s.softcap));
  setText("softcap-out", s.softcap > 0 ? s.softcap.toFixed(1) : "0 (off)");
  options(
    $<HTMLSelectElement>("query"),
    cfg.items[0].labels.map((l, i) => `${i}: ${l}`),
    Math.min(s.query, cfg.T - 1),
  );
  const names = headNames(s, cfg);
  options(
    $<HTMLSelectElement>("head"),
    Array.from({ length: cfg.heads }, (_, h) => `head ${h}${names ? `: ${names[h]}` : ""}`),
    Math.min(s.head, cfg.heads - 1),
  );
  setValue("speed", String(s.speed));
  const nEdits = Object.keys(s.edits).length;
  setText(
    "edits-info",
    trained
      ? "A trained model's cells are not editable."
      : nEdits
        ? `${nEdits} edited cell${nEdits > 1 ? "s" : ""}`
        : "Click a cell of X, W or Wᴼ to edit it.",
  );
  setFlag("reset-edits", "disabled", nEdits === 0);
  const unknown = cfg.items[0].tokens.length;
  setText(
    "token-info",
    `${unknown} token${unknown > 1 ? "s" : ""}${cfg.truncated ? " (text truncated)" : ""} · T = ${cfg.T}, d_model = ${cfg.dModel}, d_k = ${cfg.dK}, d_v = ${cfg.dV}, heads = ${cfg.heads}/${cfg.kvHeads} kv`,
  );
  setText("notes", cfg.notes.join("; "));
  if (trained) for (const id of FIXED_WHEN_TRAINED) setFlag(id, "disabled", true);
  else for (const id of ENABLED_OTHERWISE) setFlag(id, "disabled", false);
  if (document.body.classList.contains("trained-mode") !== trained)
    document.body.classList.toggle("trained-mode", trained);
  syncTrainedBanner(s);
}
