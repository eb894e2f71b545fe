// Type-checked (never run) by types.test.js: an .mts consumer (always an ES
// module), resolved through the "import" condition to dist/attnkit.d.ts.
import createAttnkit, * as attnkit from "attnkit";
import { AttnkitError, version } from "attnkit";
import type { Attnkit, AttnkitWithModel, KVCache, Matrix } from "attnkit";
// The lean entry points: the same exports, the same types.
import createSimd from "attnkit/simd";
import { createAttnkit as createThreads } from "attnkit/threads";
import createModel, { AttnkitError as ModelError } from "attnkit/model";

const attn: Attnkit = await createAttnkit({ simd: true, timeout: 1000 });
const same: Attnkit = await attnkit.createAttnkit();
const lean: Attnkit[] = [await createSimd(), await createThreads({ threads: 2 })];
const withModel: AttnkitWithModel = await createModel({ model: true });
console_log(lean, withModel, new ModelError("m") instanceof AttnkitError);
const out: Matrix = attn.attention([[1, 0]], [[1, 0]], [[1, 2]], {
  causal: true,
  out: new Float32Array(2),
});
const cache: KVCache = same.createKVCache({ numKvHeads: 1, dK: 2, dV: 2, capacity: 8 });
cache.dispose();
const v: string = version + attnkit.version + attn.version;
const supported: boolean = attnkit.simdSupported();
try {
  attn.dispose();
} catch (e) {
  if (e instanceof AttnkitError) console_log(e.code, e.parameter);
  if (e instanceof attnkit.AttnkitTypeError) console_log(e.code);
}
function console_log(..._values: unknown[]): void {}
console_log(out.data, v, supported);

// @ts-expect-error the module has no such export
attnkit.createAttnKit;
// @ts-expect-error no such entry point
await import("attnkit/scalar");
// @ts-expect-error nested rows are Arrays, not array-like objects
attn.attention({ length: 1, 0: [1] }, [[1]], [[1]]);
