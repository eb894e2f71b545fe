// attnkit: the lifecycle of the objects that hold a handle on the core's
// objects in wasm memory (KV caches, packed weights, models, trainers,
// task generators).
// dispose() frees a handle once; an object the user forgot to dispose is
// freed when collected (while the module lives); a call on a disposed object
// throws "disposed". Handles live in a WeakMap, out of users' reach: a copy
// of an object has none and cannot free it twice.
import { AttnkitError, describe } from "./errors.js";

/**
 * The handles of one module: `module.alive()` tells whether it lives and
 * `module.assertAlive()` is every call's check; `free[kind](handle)` frees a
 * handle of that kind.
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
    /** Gives `object` its handle, freed with it. */
    track(object, kind, handle) {
      states.set(object, { kind, handle });
      registry?.register(object, { kind, handle }, object);
    },
    /** The handle of a live `object`; else an error naming `parameter` (a `noun`). */
    live(object, noun, parameter) {
      module.assertAlive();
      const state = states.get(object);
      if (!state?.handle) {
        throw new AttnkitError(
          `${parameter}: expected a live ${noun}, got ${state ? "one that was disposed" : describe(object)}`,
          { code: state ? "disposed" : "invalid_argument", parameter },
        );
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
