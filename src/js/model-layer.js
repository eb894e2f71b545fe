// attnkit: the model layer's JS (model.js, language.js, head-scores.js and what
// only they use), the functions a module loaded with createAttnkit({ model: true })
// adds. Built as a file of its own (dist/model-layer.mjs, model-layer.node.cjs,
// from web-model-layer.js and node-model-layer.js) that the entry points holding
// the model builds load with a model build only (loader.js), as checkpoint.mjs is
// loaded on the first openCheckpoint: the other loads never carry it.
import { modelMethods } from "./model.js";
import { headScores } from "./head-scores.js";
import { AttnkitError } from "./errors.js";

/**
 * The model layer over `load()`, a promise of the ONNX writer's module
 * (onnx.js: the file's literal import or require), loaded on the first
 * model.exportOnnx().
 */
export function modelLayerOf(load) {
  let loading = null;
  const onnx = () =>
    (loading ??= load().catch((e) => {
      loading = null;
      const err = new AttnkitError(
        "model: expected attnkit's ONNX writer (onnx.mjs or onnx.node.cjs, beside the entry " +
          `point: a bundle or a copy of dist/ must keep it) to load, got: ${e?.message ?? e}`,
        { code: "load_failed", parameter: "model" },
      );
      err.cause = e;
      throw err;
    }));
  /** The model layer's functions over a model build's module of `mem` (its Marshal); `module` tells whether it lives. */
  return (mem, module) => ({ ...modelMethods(mem, module, onnx), headScores });
}
