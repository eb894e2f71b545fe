// Type-checked (never run) by types.test.js where the lib has esnext.disposable
// (lib "esnext", "esnext.disposable", or @types/node): a KV cache is Disposable.
import { createAttnkit } from "attnkit";
import type { KVCache } from "attnkit";

const attn = await createAttnkit();
{
  using scoped = attn.createKVCache({ numKvHeads: 1, dK: 1, dV: 1, capacity: 1 });
  scoped.append([[1]], [[1]]);
  using forked = scoped.fork();
  forked.truncate(0);
  using packed = attn.packWeights({ W_Q: [[1]], W_K: [[1]], W_V: [[1]] }, { numHeads: 1 });
  attn.multiHeadAttention([[1]], packed, { numHeads: 1 });
}
const cache: KVCache = attn.createKVCache({ numKvHeads: 1, dK: 1, dV: 1, capacity: 1 });
cache[Symbol.dispose]();
const disposable: Disposable = cache;
const stack = new DisposableStack();
stack.use(attn.createKVCache({ numKvHeads: 1, dK: 1, dV: 1, capacity: 1 }));
stack.dispose();
disposable[Symbol.dispose]();
