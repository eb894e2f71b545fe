// attnkit: the lifecycle of the objects that hold a handle on the core's
// objects in wasm memory (KV caches, packed weights, models, trainers, task
// generators, datasets, samplers), and the one check of every parameter that
// takes such an object.
// dispose() frees a handle once; an object the user forgot to dispose is
// freed when collected (while the module lives); a call on a disposed object
// throws "disposed". Handles live in a WeakMap, out of users' reach: a copy
// of an object has none and cannot free it twice.
// Each object knows its kind ("Model", "Trainer" ...): a parameter given an
// object of another kind throws an AttnkitTypeError naming both, before any
// handle reaches wasm.
import { AttnkitError, AttnkitTypeError, KIND, describe, kindOf, withArticle } from "./errors.js";

/** Marks `object` as one of the package's objects of `kind` ("Model", "Tokenizer" ...). */
export function brand(object, kind) {
  Object.defineProperty(object, KIND, { value: kind });
}

/**
 * The handles of one module: `module.alive()` tells whether it lives and
 * `module.assertAlive()` is every call's check; `free[kind](handle)` frees a
 * handle of that kind (the kinds are the classes' names: "Model" ...).
 */
export function handles(module, free) {
  const registry =
    typeof FinalizationRegistry === "function"
      ? new FinalizationRegistry(({ kind, handle }) => {
          if (module.alive()) free[kind](handle);
        })
      : null;
  // The state of each object: {kind, handle}, handle 0 once disposed.
  const states = new WeakMap();
  return {
    /** Gives `object` (of `kind`) its handle, freed with it. */
    track(object, kind, handle) {
      brand(object, kind);
      states.set(object, { kind, handle });
      registry?.register(object, { kind, handle }, object);
    },
    /**
     * The handle of a live `object` of `kind` given as `parameter`; else an
     * AttnkitTypeError (another kind, another module's, not one of the
     * package's objects) or an AttnkitError "disposed".
     */
    live(object, kind, parameter) {
      module.assertAlive();
      const state = states.get(object);
      if (state?.kind !== kind) {
        const given = kindOf(object);
        const got =
          given === kind
            ? `${withArticle(given)} of another attnkit module (each takes only its own objects)`
            : given
              ? withArticle(given)
              : describe(object);
        throw new AttnkitTypeError(`${parameter}: expected ${withArticle(kind)}, got ${got}`, {
          parameter,
        });
      }
      if (!state.handle) {
        throw new AttnkitError(`${parameter}: expected a live ${kind}, got one that was disposed`, {
          code: "disposed",
          parameter,
        });
      }
      return state.handle;
    },
    /** Frees `object`'s handle; later calls on it throw "disposed". */
    dispose(object) {
      const state = states.get(object);
      if (!state?.handle) return;
      registry?.unregister(object);
      if (module.alive()) free[state.kind](state.handle);
      state.handle = 0;
    },
  };
}
