// tfjs-core with its gradients and tfjs-backend-wasm in one module, for the
// benchmarks that need tfjs's autograd (bench/wasm/backward.mjs, train.mjs).
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

// tfjs with its gradients, as a bundler user gets it: tfjs-core's Node bundle
// registers no gradient, and its ES modules (which do, through
// register_all_gradients) use extensionless imports that Node cannot load. So
// esbuild bundles tfjs-core's ES modules, register_all_gradients and
// tfjs-backend-wasm into one CommonJS file (one copy of tfjs-core) under
// build/bench, from the packages of bench/package.json.
export async function loadTfjsWithGradients() {
  const benchDir = fileURLToPath(new URL("..", import.meta.url));
  const outDir = path.join(benchDir, "..", "build", "bench");
  const entry = path.join(outDir, "tfjs-grads-entry.mjs"),
    outfile = path.join(outDir, "tfjs-grads.cjs");
  mkdirSync(outDir, { recursive: true });
  writeFileSync(
    entry,
    [
      'export * from "@tensorflow/tfjs-core";',
      'import "@tensorflow/tfjs-core/dist/register_all_gradients";',
      'export { setWasmPaths, setThreadsCount } from "@tensorflow/tfjs-backend-wasm";',
    ].join("\n"),
  );
  const { build } = await import("esbuild");
  await build({
    entryPoints: [entry],
    bundle: true,
    platform: "node",
    format: "cjs",
    mainFields: ["module", "main"],
    nodePaths: [path.join(benchDir, "node_modules")],
    outfile,
    logLevel: "warning",
  });
  const tf = createRequire(import.meta.url)(outfile);
  tf.setWasmPaths(
    path.join(benchDir, "node_modules", "@tensorflow", "tfjs-backend-wasm", "dist") + path.sep,
  );
  return tf;
}
