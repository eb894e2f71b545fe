// Type-checked (never run) by types.test.js where the lib has esnext.disposable:
// `using` in a CommonJS consumer (the "require" condition's dist/attnkit.d.cts).
import attnkit = require("attnkit");

async function main(): Promise<void> {
  const attn = await attnkit.createAttnkit();
  using cache = attn.createKVCache({ numKvHeads: 1, dK: 1, dV: 1, capacity: 1 });
  cache.append([[1]], [[1]]);
  const disposable: Disposable = cache.fork();
  disposable[Symbol.dispose]();
}
main();
