// attnkit: the KVCache class, a handle on the core's KVCache in wasm memory
// (keys and values of past tokens, per batch item and K/V head) with the
// calls that append to it, read it and attend over it.
import { rangeError, typeError } from "./errors.js";
import { handles } from "./handles.js";
import { checkCount, checkKeys, isObject, toTensor } from "./convert.js";
import {
  cacheRows,
  cacheShape,
  checkConfig,
  checkOptions,
  headsOut,
  weightMats,
} from "./arguments.js";
import { NUM_HEADS_NAMES, headWords, names } from "./marshal.js";

// A cache's Status names its config (creating it) or itself (forking it).
const CONFIG_NAMES = names({ capacity: "config.capacity", batch: "config.batch" });
const FORK_NAMES = names({ capacity: "cache.capacity" });

const CACHE_KEYS = ["batch", "numKvHeads", "dK", "dV", "capacity"];

/** The config of a new cache, checked: {batch, numKvHeads, dK, dV, capacity}. */
function checkCacheConfig(config) {
  if (!isObject(config) || Array.isArray(config)) {
    throw typeError("config", "an object {batch?, numKvHeads, dK, dV, capacity}", config);
  }
  checkKeys("config", config, CACHE_KEYS);
  return {
    batch: config.batch === undefined ? 1 : checkCount("config.batch", config.batch),
    numKvHeads: checkCount("config.numKvHeads", config.numKvHeads),
    dK: checkCount("config.dK", config.dK),
    dV: checkCount("config.dV", config.dV),
    capacity: checkCount("config.capacity", config.capacity),
  };
}

/** Checks that (item, kvHead) names one of the cache's blocks. */
function checkBlock(cache, item, kvHead) {
  checkCount("item", item, { allowZero: true });
  checkCount("kvHead", kvHead, { allowZero: true });
  if (item >= cache.batch) {
    throw rangeError("item", `an index below batch = ${cache.batch}`, `${item}`);
  }
  if (kvHead >= cache.numKvHeads) {
    throw rangeError("kvHead", `an index below numKvHeads = ${cache.numKvHeads}`, `${kvHead}`);
  }
}

/**
 * The KVCache class of one module: `mem` its Marshal, `module.alive()` whether
 * the module is still live and `module.assertAlive()` the check every call makes.
 */
export function defineKVCache(mem, module) {
  const M = mem.M;
  const caches = handles(module, { KVCache: M.kvFree });

  return class KVCache {
    constructor(config, handle = 0) {
      if (handle) {
        Object.assign(this, config);
      } else {
        const { batch, numKvHeads, dK, dV, capacity } = checkCacheConfig(config);
        handle = M.kvCreate(batch, numKvHeads, dK, dV, capacity);
        if (!handle) {
          mem.check(M.lastErrorCode(), CONFIG_NAMES);
        }
        Object.assign(this, { batch, numKvHeads, dK, dV, capacity });
      }
      caches.track(this, "KVCache", handle);
    }
    #live() {
      return caches.live(this, "KVCache", "cache");
    }
    get size() {
      return M.kvSize(this.#live());
    }
    append(K, V) {
      const handle = this.#live();
      const k = cacheRows("K", toTensor("K", K), this.batch);
      const v = cacheRows("V", toTensor("V", V), this.batch);
      mem.run([k, v], [], (kv, vv) => M.kvAppend(handle, mem.args(kv, vv)));
    }
    #cached(item, kvHead, fn) {
      const handle = this.#live();
      checkBlock(this, item, kvHead);
      return mem.copyOut(fn(handle, item, kvHead));
    }
    keys(item, kvHead) {
      return this.#cached(item, kvHead, M.kvKeys);
    }
    values(item, kvHead) {
      return this.#cached(item, kvHead, M.kvValues);
    }
    attend(Q, numHeads, options) {
      const handle = this.#live();
      checkOptions(options);
      const q = cacheRows("Q", toTensor("Q", Q), this.batch);
      checkCount("numHeads", numHeads);
      // The K/V heads are the cache's: numHeads is the one to fit them (the
      // core's message would name the cache's numKvHeads).
      if (numHeads % this.numKvHeads !== 0) {
        throw rangeError(
          "numHeads",
          `a multiple of the cache's numKvHeads = ${this.numKvHeads}`,
          `${numHeads}`,
        );
      }
      const [out] = mem.runWithOptions(
        [q],
        options,
        [{ rows: q.rows, cols: numHeads * this.dV }],
        ([qv], o, [ov]) => M.kvAttend(handle, mem.args(qv, numHeads, ov, o)),
        NUM_HEADS_NAMES,
        true,
      );
      return { data: out.data, shape: cacheShape(q, out.cols, this.batch) };
    }
    decode(X, weights, config, options) {
      const handle = this.#live();
      checkOptions(options);
      const x = cacheRows("X", toTensor("X", X), this.batch);
      const mats = weightMats(weights, true);
      const heads = checkConfig(config);
      const dOut = headsOut(heads, x.cols, mats[3], 0);
      const [out] = mem.runWithOptions(
        [x, ...mats],
        options,
        [{ rows: x.rows, cols: dOut }],
        ([xv, wq, wk, wv, wo], o, [ov]) =>
          M.kvDecode(handle, mem.args(xv, wq, wk, wv, wo, headWords(heads), ov, o)),
        undefined,
        true,
      );
      return { data: out.data, shape: cacheShape(x, dOut, this.batch) };
    }
    truncate(size) {
      const handle = this.#live();
      checkCount("size", size, { allowZero: true });
      mem.check(M.kvTruncate(handle, size));
    }
    fork() {
      const copy = M.kvClone(this.#live());
      if (!copy) mem.check(M.lastErrorCode(), FORK_NAMES);
      const { batch, numKvHeads, dK, dV, capacity } = this;
      return new KVCache({ batch, numKvHeads, dK, dV, capacity }, copy);
    }
    reset() {
      M.kvReset(this.#live());
    }
    dispose() {
      caches.dispose(this);
    }
    [Symbol.dispose ?? Symbol.for("Symbol.dispose")]() {
      this.dispose();
    }
  };
}
