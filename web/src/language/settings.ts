// The Language view's settings as the panel's fields and the URL's parameters: the preset,
// each number that differs from it, the sentence looked into and the generation's options.
import { fieldValue, type NumberField } from "../panel";
import { PRESETS, type LangConfig, type PresetId } from "./protocol";

export const PRESET_IDS: readonly PresetId[] = ["small", "default", "large"];
export const DEFAULT_PRESET: PresetId = "default";
export const DEFAULT_SENTENCE = "the train left the station on time";

type NumberKey = "numLayers" | "numHeads" | "dModel" | "dFF" | "seqLen" | "batch";

export const NUMBER_FIELDS: readonly NumberField<NumberKey>[] = [
  { key: "numLayers", id: "lang-layers", param: "ll", name: "layers", lo: 1, hi: 8 },
  { key: "numHeads", id: "lang-heads", param: "lh", name: "heads", lo: 1, hi: 8 },
  { key: "dModel", id: "lang-dmodel", param: "ldm", name: "d_model", lo: 8, hi: 256 },
  { key: "dFF", id: "lang-dff", param: "lff", name: "d_ff", lo: 8, hi: 1024 },
  { key: "seqLen", id: "lang-context", param: "lctx", name: "context", lo: 8, hi: 256 },
  { key: "batch", id: "lang-batch", param: "lb", name: "batch", lo: 1, hi: 64 },
];

export const LEARNING_RATES: readonly [number, string][] = [
  [5e-3, "5e-3"],
  [3e-3, "3e-3"],
  [1e-3, "1e-3"],
  [3e-4, "3e-4"],
];

export interface GenSettings {
  prompt: string;
  temperature: number;
  topK: number;
  length: number;
}

export const DEFAULT_GEN: GenSettings = {
  prompt: "Call me Ishmael. ",
  temperature: 0.8,
  topK: 20,
  length: 120,
};

export const GEN_FIELDS = [
  {
    key: "temperature",
    id: "lang-temp",
    param: "lgt",
    name: "temperature",
    lo: 0,
    hi: 2,
    whole: false,
  },
  { key: "topK", id: "lang-topk", param: "lgk", name: "top-k", lo: 0, hi: 512, whole: true },
  { key: "length", id: "lang-length", param: "lgl", name: "length", lo: 1, hi: 1000, whole: true },
] as const;

export const PARAMS = {
  preset: "lp",
  lr: "llr",
  sentence: "ls",
  prompt: "lgp",
} as const;

/** Every URL parameter of the Language view. */
export const LANGUAGE_PARAMS: readonly string[] = [
  ...Object.values(PARAMS),
  ...NUMBER_FIELDS.map((f) => f.param),
  ...GEN_FIELDS.map((f) => f.param),
];

/**
 * `c` trained at learning rate `lr`: the cosine's floor stays the preset's, or `lr` itself where
 * that is lower (the floor is at most the rate).
 */
export function withLearningRate(c: LangConfig, lr: number, preset: PresetId): LangConfig {
  return { ...c, learningRate: lr, minLearningRate: Math.min(PRESETS[preset].minLearningRate, lr) };
}

/** d_model must split into the heads: the nearest multiple of numHeads in range, and why. */
export function fitHeads(c: LangConfig): [LangConfig, string] {
  if (c.dModel % c.numHeads === 0) return [c, ""];
  const f = NUMBER_FIELDS.find((x) => x.key === "dModel")!;
  let d = Math.round(c.dModel / c.numHeads) * c.numHeads;
  if (d < f.lo) d += c.numHeads;
  if (d > f.hi) d -= c.numHeads;
  return [
    { ...c, dModel: d },
    `d_model ${c.dModel} → ${d}: each of the ${c.numHeads} heads gets d_model / heads dimensions.`,
  ];
}

export interface LangSettings {
  preset: PresetId;
  config: LangConfig;
  sentence: string;
  gen: GenSettings;
  /** Per field id: what the link held that was not used as written. */
  notes: Record<string, string>;
}

export function settingsQuery(s: Omit<LangSettings, "notes">): string {
  const p = new URLSearchParams();
  const base = PRESETS[s.preset];
  if (s.preset !== DEFAULT_PRESET) p.set(PARAMS.preset, s.preset);
  for (const f of NUMBER_FIELDS)
    if (s.config[f.key] !== base[f.key]) p.set(f.param, String(s.config[f.key]));
  if (s.config.learningRate !== base.learningRate) p.set(PARAMS.lr, String(s.config.learningRate));
  if (s.sentence !== DEFAULT_SENTENCE) p.set(PARAMS.sentence, s.sentence);
  if (s.gen.prompt !== DEFAULT_GEN.prompt) p.set(PARAMS.prompt, s.gen.prompt);
  for (const f of GEN_FIELDS)
    if (s.gen[f.key] !== DEFAULT_GEN[f.key]) p.set(f.param, String(s.gen[f.key]));
  return p.toString();
}

export function settingsFromQuery(query: string): LangSettings {
  const p = new URLSearchParams(query);
  const notes: Record<string, string> = {};
  const link = (param: string, raw: string) => `The link's ${param}=${raw}`;
  let preset = DEFAULT_PRESET;
  const rawPreset = p.get(PARAMS.preset);
  if (rawPreset !== null) {
    if ((PRESET_IDS as readonly string[]).includes(rawPreset)) preset = rawPreset as PresetId;
    else
      notes["lang-preset"] =
        `${link(PARAMS.preset, rawPreset)} is not a preset (${PRESET_IDS.join(", ")}): using ${preset}.`;
  }
  let config = { ...PRESETS[preset] };
  for (const f of NUMBER_FIELDS) {
    const raw = p.get(f.param);
    if (raw === null) continue;
    const [v, why] = fieldValue(f, raw, config[f.key]);
    config[f.key] = v;
    if (why) notes[f.id] = `${link(f.param, raw)}: ${why}`;
  }
  const [fitted, why] = fitHeads(config);
  config = fitted;
  if (why) notes["lang-dmodel"] = why;
  const lr = p.get(PARAMS.lr);
  if (lr !== null) {
    const known = LEARNING_RATES.find(([v]) => v === Number(lr) && lr.trim() !== "");
    if (known) config = withLearningRate(config, known[0], preset);
    else
      notes["lang-lr"] =
        `${link(PARAMS.lr, lr)} is not one of the rates offered: using ${config.learningRate}.`;
  }
  const gen = { ...DEFAULT_GEN };
  const prompt = p.get(PARAMS.prompt);
  if (prompt !== null && prompt !== "") gen.prompt = prompt;
  for (const f of GEN_FIELDS) {
    const raw = p.get(f.param);
    if (raw === null) continue;
    const [v, why2] = fieldValue(f, raw, gen[f.key]);
    gen[f.key] = v;
    if (why2) notes[f.id] = `${link(f.param, raw)}: ${why2}`;
  }
  const sentence = p.get(PARAMS.sentence) || DEFAULT_SENTENCE;
  return { preset, config, sentence, gen, notes };
}
