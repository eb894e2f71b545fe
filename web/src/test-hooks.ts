// The test hook window.__attnkit: timing, the state, and the numbers of every matrix on
// screen (canvas ones included), read by the browser suites in tests/browser.
import { hasTrained, openTrained, type TrainedLayer } from "./trained";
import { lastSaturation } from "./views/saturation";
import { drawnIds, drawnMatrix } from "./draw/registry";
import { page } from "./page";
import { toQuery } from "./state";
import { trainHook, trainInspectionHook } from "./train/view";
import { languageHook } from "./language/view";
import { gpt2Hook } from "./gpt2/entry";

export function installTestHooks(): void {
  (window as unknown as { __attnkit: unknown }).__attnkit = {
    // Trained mode (tests/browser/trained.test.mjs): open a layer given as plain arrays,
    // and read every head's attention weights as the page computed them.
    trained: {
      open: (t: TrainedLayer) => openTrained(plainTrained(t)),
      shown: () => hasTrained(),
      headWeights: () => page.model?.items[0].heads.map((tr) => Array.from(tr.weights.data)),
    },
    // The saturation view's gradient (tests/browser/saturation.test.mjs).
    saturation: () => lastSaturation(),
    timing: page.timing,
    target: page.attn.target,
    simd: page.attn.simd,
    state: () => page.state,
    animation: () => page.animation,
    playing: () => page.playing,
    matrix: (id: string, nth = 0) => drawnMatrix(id, nth),
    matrixIds: () => drawnIds(),
    query: () => toQuery(page.state),
    /** The Train view's run: metrics, snapshots and the inspection on screen. */
    train: () => trainHook(),
    trainInspection: () => trainInspectionHook(),
    /** The Language view's run: text, losses, sample, sentence maps, generation. */
    language: () => languageHook(),
    /** The GPT-2 view: the checkpoint picked, the download, the model, the sentence's maps, generation. */
    gpt2: () => gpt2Hook(),
  };
}

/** A TrainedLayer whose matrices came through a test driver as number arrays. */
function plainTrained(t: TrainedLayer): TrainedLayer {
  const m = (x: TrainedLayer["X"]) => ({ ...x, data: Float32Array.from(x.data) });
  return {
    ...t,
    // As the Train view passes them (Inspection.tokens, .targets).
    tokens: Int32Array.from(t.tokens),
    targets: Int32Array.from(t.targets),
    X: m(t.X),
    W_Q: m(t.W_Q),
    W_K: m(t.W_K),
    W_V: m(t.W_V),
    W_O: m(t.W_O),
    weights: { ...t.weights, data: Float32Array.from(t.weights.data) },
  };
}
