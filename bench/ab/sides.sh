# Sourced by bench/ab/{run,heads,layer,small}.sh: one side of a wasm A/B, a
# folder with a bundled JS layer (attnkit.node.cjs) beside a build's SIMD128
# Node module, as bench/ab/paired.mjs loads it.
# wasm_side OUT_DIR JS_ROOT WASM_BUILD: JS_ROOT's src/js/node.js bundled (the
# side's own JS layer, or this tree's for both), WASM_BUILD's module copied.
wasm_side() {
  local out=$1 js_root=$2 wasm=$3
  mkdir -p "$out"
  npx esbuild "$js_root/src/js/node.js" --bundle --format=cjs --platform=node --log-level=warning \
    '--define:__ATTNKIT_VERSION__="ab"' --external:./attnkit-simd.node.cjs \
    --external:./attnkit-scalar.node.cjs --external:./attnkit-threads.node.cjs \
    --external:./attnkit-simd-model.node.cjs --external:./attnkit-scalar-model.node.cjs \
    --outfile="$out/attnkit.node.cjs"
  cp "$wasm/src/bindings/attnkit-simd.node.cjs" "$out/"
}
