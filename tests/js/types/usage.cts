// Type-checked (never run) by types.test.js: a CommonJS consumer (.cts) under
// module node16 / nodenext (and preserve with moduleResolution bundler), resolved
// through the "require" condition to dist/attnkit.d.cts (dist/attnkit.node.cjs at
// run time, whose module.exports has createAttnkit, default, version, ...).
import attnkit = require("attnkit");
import createAttnkitDefault from "attnkit";
import { createAttnkit, AttnkitError, version } from "attnkit";
import type { Attnkit, KVCache, LoadOptions, MatrixLike } from "attnkit";
// A lean entry point (dist/simd.node.cjs at run time): the same exports and types.
import lean = require("attnkit/simd");

async function main(): Promise<string> {
  const options: LoadOptions = { threads: 2, wasmPaths: "/dist/", timeout: 10_000 };
  const attn: Attnkit = await attnkit.createAttnkit(options);
  const viaDefault: Attnkit = await attnkit.default();
  const viaInterop: Attnkit = await createAttnkitDefault({ simd: false });
  const named: Attnkit = await createAttnkit();
  const simd: Attnkit = await lean.createAttnkit({ simd: false });
  simd.dispose();
  const rows: MatrixLike = [
    [1, 0],
    [0, 1],
  ];
  const cache: KVCache = attn.createKVCache({ numKvHeads: 1, dK: 2, dV: 2, capacity: 8 });
  cache.append({ data: new Float32Array(2), shape: [1, 1, 2] }, { data: [1, 2], shape: [1, 1, 2] });
  cache.fork().dispose();
  cache.dispose();
  try {
    named.matmul(rows, rows);
  } catch (e) {
    if (e instanceof AttnkitError && e.code === "disposed") return e.parameter;
    if (e instanceof attnkit.AttnkitTypeError) return e.message;
  }
  viaDefault.dispose();
  viaInterop.dispose();
  // The ES module build, from CommonJS: import() takes the "import" condition.
  const esm = await import("attnkit");
  const fromEsm: Attnkit = await esm.createAttnkit();
  return (
    version + attnkit.version + esm.version + fromEsm.version + String(attnkit.simdSupported())
  );
}
main();

// @ts-expect-error the module has no such export
attnkit.createAttnKit;
attnkit.default().then((a) =>
  // @ts-expect-error a DataView is not matrix data
  a.softmax({ data: new DataView(new ArrayBuffer(8)), rows: 1, cols: 2 }),
);
