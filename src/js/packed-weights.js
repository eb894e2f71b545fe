// attnkit: PackedWeights, a handle on the core's PackedMultiHeadWeights in
// wasm memory: a multi-head layer's W_Q, W_K, W_V and W_O, checked and packed
// once by packWeights() for any number of multiHeadAttention calls, which then
// copy no weights into wasm memory and neither check nor pack them again.
import { AttnkitError, AttnkitTypeError } from "./errors.js";
import { handles } from "./handles.js";
import { checkConfig, weightMats } from "./arguments.js";
import { headWords } from "./marshal.js";

// Marks every pack of every module, so that a pack passed to another module's
// call gets its own message.
const PACK_BRAND = Symbol.for("attnkit.packedWeights");

/** Whether `value` is packed weights (of any module). */
export function isPackedWeights(value) {
  return value != null && typeof value === "object" && value[PACK_BRAND] === true;
}

/**
 * The PackedWeights class of one module: `mem` its Marshal, `module.alive()`
 * whether the module is still live and `module.assertAlive()` the check every
 * call makes. Returns the class and `handleOf(weights)`, the live handle of a
 * pack of this module for a call (else the error that names `weights`).
 */
export function definePackedWeights(mem, module) {
  const M = mem.M;
  const packs = handles(module, { packed: M.packedFree });

  class PackedWeights {
    constructor(weights, config) {
      if (isPackedWeights(weights)) {
        throw new AttnkitTypeError(
          "weights: expected an object {W_Q, W_K, W_V, W_O?} of plain weights, got packed weights",
          { parameter: "weights" },
        );
      }
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
      Object.defineProperty(this, PACK_BRAND, { value: true });
      packs.track(this, "packed", handle);
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

  function handleOf(weights) {
    if (!(weights instanceof PackedWeights)) {
      module.assertAlive();
      throw new AttnkitError(
        "weights: expected packed weights of this module (its packWeights()), got packed weights of another attnkit module",
        { code: "invalid_argument", parameter: "weights" },
      );
    }
    return packs.live(weights, "PackedWeights", "weights");
  }

  return { PackedWeights, handleOf };
}
