// attnkit: the model layer's JS (model.js, language.js, head-scores.js and what
// only they use), the functions a module loaded with createAttnkit({ model: true })
// adds. Built as a file of its own (dist/model-layer.mjs, model-layer.node.cjs)
// that the entry points holding the model builds load with a model build only
// (loader.js), as checkpoint.mjs is loaded on the first openCheckpoint: the
// other loads never carry it.
import { modelMethods } from "./model.js";
import { headScores } from "./head-scores.js";

/** The model layer's functions over a model build's module of `mem` (its Marshal); `module` tells whether it lives. */
export function modelLayer(mem, module) {
  return { ...modelMethods(mem, module), headScores };
}
