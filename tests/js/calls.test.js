// The table of calls (src/js/calls.js), from which attnkit/worker builds its
// proxies, against the synchronous API: every function of a module (with and
// without the model layer) is in the table and the table names no other; each
// call the table says hands out a held object hands out one of that class; each
// held object's class has exactly the methods and properties the table lists,
// and kindOf tells each kind from the others by them; the calls it marks as the
// model layer's are those a module loaded without that layer refuses.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { createAttnkit } from "attnkit";
import {
  HELD_OBJECTS,
  MODULE_CALLS,
  callsOf,
  kindOf,
  methodsOf,
  propertiesOf,
} from "../../src/js/calls.js";
import { gpt2Checkpoint } from "./lib/gpt2-checkpoint.js";

/** The function keys of a module, in its order. */
const functionsOf = (attn) => Object.keys(attn).filter((k) => typeof attn[k] === "function");

const TASK = { kind: "copy", length: 3, vocabSize: 8 };
const MODEL = { maxSeqLen: 6, dModel: 8, numHeads: 2 };
const TEXT = "the whale, the sea and the ship; call me the captain of the white whale. ".repeat(20);

/**
 * The arguments of each call of the table that hands out a held object (its
 * `returns`), given the objects made so far (by kind) and the module.
 */
const MAKERS = {
  createKVCache: () => [{ numKvHeads: 1, dK: 2, dV: 2, capacity: 4 }],
  packWeights: () => {
    const m = () => ({ data: new Float32Array(16), rows: 4, cols: 4 });
    return [{ W_Q: m(), W_K: m(), W_V: m(), W_O: m() }, { numHeads: 2 }];
  },
  createModel: (made, attn) => {
    const { vocabulary } = attn.createTokenizer("abcdefg");
    return [
      { ...MODEL, vocabSize: vocabulary.length },
      { seed: 1, vocabulary },
    ];
  },
  loadModel: (made) => [made.Model.exportWeights()],
  createTrainer: (made) => [made.Model, { learningRate: 1e-2 }],
  createTaskGenerator: () => [TASK, { seed: 2 }],
  createTokenizer: () => ["hello, world"],
  createTextDataset: () => [TEXT, { seqLen: 8, seed: 3 }],
  openCheckpoint: () => {
    const c = gpt2Checkpoint();
    return [c.safetensors, { config: c.config }];
  },
};
/** The same for the held objects' calls that hand out one: [kind, method, arguments]. */
const HELD_MAKERS = {
  "KVCache.fork": () => [],
  "Model.sampler": () => ["a", { seed: 5 }],
};

describe("the table of calls (calls.js) against the synchronous API", () => {
  let attn, lean;
  before(async () => {
    attn = await createAttnkit({ simd: true, model: true });
    lean = await createAttnkit({ simd: true });
  });
  after(() => {
    attn?.dispose();
    lean?.dispose();
  });

  it("names every function of a module, and no other", () => {
    for (const module of [attn, lean]) {
      assert.deepEqual(functionsOf(module).sort(), Object.keys(MODULE_CALLS).sort());
    }
  });

  it("the model layer's calls are those a module without it refuses", () => {
    for (const name of Object.keys(MODULE_CALLS)) {
      if (name === "dispose") continue;
      let error;
      try {
        lean[name]();
      } catch (e) {
        error = e;
      }
      const refused = /createAttnkit\(\{ model: true \}\)/.test(error?.message ?? "");
      assert.equal(refused, MODULE_CALLS[name].model === true, name);
    }
  });

  it("a call that hands out a held object hands out one of the kind it names", async () => {
    const made = {};
    const all = [];
    for (const [name, call] of Object.entries(MODULE_CALLS)) {
      if (call.returns === undefined) continue;
      assert.ok(name in MAKERS, `${name}: the test knows how to call it`);
      const result = attn[name](...MAKERS[name](made, attn));
      // An async call's Promise resolves to the object.
      assert.equal(result instanceof Promise, call.async === true, name);
      const object = await result;
      all.push(object);
      assert.equal(object.constructor.name, call.returns, name);
      assert.equal(kindOf(object), call.returns, name);
      made[call.returns] ??= object;
    }
    for (const [kind, { calls }] of Object.entries(HELD_OBJECTS)) {
      for (const [method, call] of Object.entries(calls)) {
        if (call.returns === undefined) continue;
        const key = `${kind}.${method}`;
        assert.ok(key in HELD_MAKERS, `${key}: the test knows how to call it`);
        const object = made[kind][method](...HELD_MAKERS[key](made));
        all.push(object);
        assert.equal(object.constructor.name, call.returns, key);
        assert.equal(kindOf(object), call.returns, key);
        made[call.returns] ??= object;
      }
    }
    assert.deepEqual(
      Object.keys(made).sort(),
      Object.keys(HELD_OBJECTS).sort(),
      "every kind of held object is handed out by a call the table names",
    );
    for (const [kind, object] of Object.entries(made)) {
      assert.deepEqual(
        methodsOf(object).sort(),
        Object.keys(callsOf(kind)).sort(),
        `${kind}'s methods`,
      );
      assert.deepEqual(
        propertiesOf(object).sort(),
        [...HELD_OBJECTS[kind].properties].sort(),
        `${kind}'s properties`,
      );
      assert.equal(kindOf(object), kind, `${kind} is told by its methods and properties`);
    }
    for (const object of all.reverse()) object.dispose?.();
  });

  it("pooled calls hand out no held object", () => {
    for (const [name, call] of Object.entries(MODULE_CALLS)) {
      if (call.pooled) assert.equal(call.returns, undefined, name);
    }
  });
});
