// attnkit: PackedWeights, a handle on the core's PackedMultiHeadWeights in
// wasm memory: a multi-head layer's W_Q, W_K, W_V and W_O, checked and packed
// once by packWeights() for any number of multiHeadAttention calls, which then
// copy no weights into wasm memory and neither check nor pack them again.
import { kindOf } from "./errors.js";
import { handles } from "./handles.js";
import { checkConfig, packGiven, weightMats } from "./arguments.js";
import { headWords } from "./marshal.js";

/** Whether `value` is packed weights (of any module) or a copy of them. */
export const isPackedWeights = (value) => packGiven(value) !== "";

/**
 * The PackedWeights class of one module: `mem` its Marshal, `module.alive()`
 * whether the module is still live and `module.assertAlive()` the check every
 * call makes. Returns the class and `handleOf(weights)`, the live handle of a
 * pack of this module for a call (else the error that names `weights`).
 */
export function definePackedWeights(mem, module) {
  const M = mem.M;
  const packs = handles(module, { PackedWeights: M.packedFree });

  class PackedWeights {
    constructor(weights, config) {
      const mats = weightMats(weights, true);
      const heads = checkConfig(config);
      let handle = 0;
      mem.run(mats, [], (wq, wk, wv, wo) => {
        handle = M.packWeights(mem.args(wq, wk, wv, wo, headWords(heads)));
        return handle ? 0 : M.lastErrorCode();
      });
      // The configuration the core resolved (it checked the same rules).
      const dModel = mats[0].rows,
        numHeads = heads.numHeads,
        numKvHeads = heads.numKvHeads || numHeads,
        dK = heads.dK || dModel / numHeads,
        dV = heads.dV || dK;
      Object.assign(this, {
        dModel,
        dOut: mats[3] ? mats[3].cols : numHeads * dV,
        numHeads,
        numKvHeads,
        dK,
        dV,
      });
      packs.track(this, "PackedWeights", handle);
      Object.freeze(this);
    }
    /** Frees the wasm memory; later calls with this pack throw "disposed". */
    dispose() {
      packs.dispose(this);
    }
    [Symbol.dispose ?? Symbol.for("Symbol.dispose")]() {
      this.dispose();
    }
  }

  /** The live handle of a pack of this module (a copy of one has none: weightMats says so). */
  function handleOf(weights) {
    if (kindOf(weights) !== "PackedWeights") weightMats(weights, true);
    return packs.live(weights, "PackedWeights", "weights");
  }

  return { PackedWeights, handleOf };
}
