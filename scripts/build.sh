#!/usr/bin/env bash
# Configures and builds one or more variants of attnkit, each in its own folder:
#   native  build/native  Release, Highway dynamic dispatch (AVX-512 ... scalar)
#   asan    build/asan    clang, AddressSanitizer + UndefinedBehaviorSanitizer (the
#                         widest Highway target, AVX2 and the fallback), with the
#                         libFuzzer target built from the same objects
#   wasm    build/wasm    Emscripten, WebAssembly SIMD128; tests run under node
#   fuzz    build/asan    the libFuzzer target alone (attnkit_fuzz)
#   wasm-threads build/wasm-threads  SIMD128 + -pthread (the package's threads build)
#   package dist/         the npm package: wasm (SIMD128), wasm-scalar and
#                         wasm-threads modules for browsers and Node, the
#                         SIMD128, scalar and threads model modules
#                         (createAttnkit({ model: true })), the JS layer, the .d.ts
# Usage: scripts/build.sh [native|asan|wasm|wasm-scalar|wasm-threads|fuzz|package]...
#        (default: native)
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
# ccache, where it is installed, for rebuilds of unchanged objects.
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)

build() {
  local variant=$1
  case "$variant" in
    native)
      [[ -f build/native/CMakeCache.txt ]] ||
        CXX=g++ cmake -S . -B build/native -DCMAKE_BUILD_TYPE=Release "${launcher[@]}"
      cmake --build build/native -j"$jobs" ;;
    asan | fuzz)
      [[ -f build/asan/CMakeCache.txt ]] ||
        CXX=clang++ cmake -S . -B build/asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DATTNKIT_FUZZ=ON \
          "${launcher[@]}"
      if [[ $variant == fuzz ]]; then
        cmake --build build/asan -j"$jobs" --target attnkit_fuzz
      else
        cmake --build build/asan -j"$jobs"
      fi ;;
    wasm)
      # emcmake's default test emulator passes a flag Node 20 rejects: use plain node.
      [[ -f build/wasm/CMakeCache.txt ]] ||
        emcmake cmake -S . -B build/wasm -DCMAKE_BUILD_TYPE=Release \
          -DCMAKE_CROSSCOMPILING_EMULATOR="$(command -v node)"
      cmake --build build/wasm -j"$jobs" ;;
    wasm-scalar)
      [[ -f build/wasm-scalar/CMakeCache.txt ]] ||
        emcmake cmake -S . -B build/wasm-scalar -DCMAKE_BUILD_TYPE=Release \
          -DATTNKIT_WASM_SIMD=OFF -DATTNKIT_BUILD_TESTS=OFF
      cmake --build build/wasm-scalar -j"$jobs" ;;
    wasm-threads)
      [[ -f build/wasm-threads/CMakeCache.txt ]] ||
        emcmake cmake -S . -B build/wasm-threads -DCMAKE_BUILD_TYPE=Release \
          -DATTNKIT_WASM_THREADS=ON -DATTNKIT_BUILD_TESTS=OFF
      cmake --build build/wasm-threads -j"$jobs" ;;
    package)
      build wasm
      build wasm-scalar
      build wasm-threads
      mkdir -p dist
      # Each tree links its default module and its model module from the same
      # objects.
      for v in simd scalar threads simd-model scalar-model threads-model; do
        dir=build/wasm; [[ $v == scalar* ]] && dir=build/wasm-scalar
        [[ $v == threads* ]] && dir=build/wasm-threads
        cp "$dir/src/bindings/attnkit-$v.mjs" "$dir/src/bindings/attnkit-$v.wasm" \
           "$dir/src/bindings/attnkit-$v.node.cjs" dist/
      done
      # The threads builds' workers. Node's are CommonJS in a "type": "module"
      # package, hence .cjs (the Node loader's locateFile asks for that name).
      for v in threads threads-model; do
        cp "build/wasm-threads/src/bindings/attnkit-$v.worker.js" dist/
        cp "build/wasm-threads/src/bindings/attnkit-$v.node.worker.js" "dist/attnkit-$v.node.worker.cjs"
      done
      # Emscripten's Node loaders, made safe to bundle and to share a process
      # with (#18). Each edit must apply exactly once, or the build stops.
      #  - scriptDirectory = __dirname: an ES module bundle has no __dirname
      #    (the wasm is embedded; the worker's path comes from locateFile).
      #  - require("fs"|"path"|"worker_threads"|"os"|...): Node's own
      #    process.getBuiltinModule where it exists (20.16+), so that an ES
      #    module bundle's require shim is never called.
      #  - global.Worker = worker_threads.Worker (threads): a process-wide
      #    global that tells other code it runs in a browser; a local instead.
      #  - quit_'s process.exit (never called: no main, no exit()): a throw.
      node - dist/attnkit-{simd,scalar,threads,simd-model,scalar-model,threads-model}.node.cjs <<'JS'
const fs = require("node:fs");
for (const file of process.argv.slice(2)) {
  let text = fs.readFileSync(file, "utf8");
  const edit = (from, to, { all = false } = {}) => {
    const n = text.split(from).length - 1;
    if (n === 0 || (!all && n !== 1)) throw new Error(`${file}: expected ${all ? "some" : "one"} ${from}, found ${n}`);
    text = text.split(from).join(to);
  };
  edit('scriptDirectory=__dirname+"/"', 'scriptDirectory=typeof __dirname=="string"?__dirname+"/":""');
  edit('require("', '(typeof process.getBuiltinModule=="function"?process.getBuiltinModule:require)("', { all: true });
  edit('process["exit"](status)', "throw toThrow");
  if (file.includes("threads")) edit("global.Worker=nodeWorkerThreads.Worker", "var Worker=nodeWorkerThreads.Worker");
  for (const bad of ['"uncaughtException"', '"unhandledRejection"', "process.exit", 'process["exit"]', "global.Worker"]) {
    if (text.includes(bad)) throw new Error(`${file} still contains ${bad}`);
  }
  fs.writeFileSync(file, text);
}
JS
      # The browser loaders record the URL they fetch their .wasm from
      # (Module.attnkitWasmUrl), so that a failed load can name it.
      node - dist/attnkit-{simd,scalar,threads,simd-model,scalar-model,threads-model}.mjs <<'JS'
const fs = require("node:fs");
for (const file of process.argv.slice(2)) {
  const text = fs.readFileSync(file, "utf8");
  const at = "function getBinary(file){";
  if (text.split(at).length !== 2) throw new Error(`${file}: expected one ${at}`);
  fs.writeFileSync(file, text.replace(at, 'Module["attnkitWasmUrl"]=wasmBinaryFile;' + at));
}
JS
      # The JS layer, once per entry point: an ES module for browsers and
      # bundlers, a CommonJS module for Node (re-exported to Node ESM by a
      # copy of node.mjs). "attnkit" holds every build (dist/attnkit.*); the
      # lean ones hold fewer, so that an app's bundle holds only those
      # (dist/simd.*, dist/threads.*, dist/model.*). The builds stay external.
      # The package's version, exported as `version` by every entry point.
      local define="--define:__ATTNKIT_VERSION__=$(node -p 'JSON.stringify(require("./package.json").version)')"
      local web_builds=() node_builds=() b entry src part
      for b in simd scalar threads simd-model scalar-model threads-model; do
        web_builds+=("--external:./attnkit-$b.mjs")
        node_builds+=("--external:./attnkit-$b.node.cjs")
      done
      # The model layer's JS is its own file, loaded with a model build; the
      # checkpoint reader (openCheckpoint's code) another, loaded on the first
      # call, and the ONNX writer (model.exportOnnx's code, with the protobuf
      # code it bundles) a third; GPT-2's tokenizer (a dependency) stays the
      # app's to resolve: a bundler that splits loads each only when it is used.
      # In browsers the tokenizer's ranks are a file the reader fetches
      # (gpt2-ranks.json, from js-tiktoken's), which no bundle holds.
      web_builds+=("--external:./model-layer.mjs" "--external:./checkpoint.mjs" "--external:./onnx.mjs"
        "--external:js-tiktoken/*")
      node_builds+=("--external:./model-layer.node.cjs" "--external:./checkpoint.node.cjs"
        "--external:./onnx.node.cjs" "--external:js-tiktoken/*")
      for part in model-layer checkpoint onnx; do
        src=$part.js; [[ $part != onnx ]] && src=web-$part.js
        npx esbuild "src/js/$src" --bundle --format=esm --log-level=warning "$define" \
          --minify --keep-names "${web_builds[@]}" --outfile="dist/$part.mjs"
        src=$part.js; [[ $part != onnx ]] && src=node-$part.js
        npx esbuild "src/js/$src" --bundle --format=cjs --platform=node --log-level=warning \
          "$define" "${node_builds[@]}" --outfile="dist/$part.node.cjs"
      done
      node -e 'require("fs").writeFileSync("dist/gpt2-ranks.json", JSON.stringify(require("js-tiktoken/ranks/gpt2")))'
      for entry in attnkit simd threads model; do
        src=${entry/#attnkit/}
        # Browsers load this file as it is: minified (class and function names
        # kept, which errors and stack traces show) so that the default load (this,
        # the SIMD build's loader and .wasm) stays within its budget.
        npx esbuild "src/js/web${src:+-$src}.js" --bundle --format=esm --log-level=warning "$define" \
          --minify --keep-names "${web_builds[@]}" --outfile="dist/$entry.mjs"
        npx esbuild "src/js/node${src:+-$src}.js" --bundle --format=cjs --platform=node \
          --log-level=warning "$define" "${node_builds[@]}" --outfile="dist/$entry.node.cjs"
        sed "s|\./attnkit\.node\.cjs|./$entry.node.cjs|" src/js/node.mjs >"dist/$entry.node.mjs"
      done
      # attnkit/worker: createAttnkitWorker (dist/worker.*) and the worker
      # script each starts (dist/worker-host.mjs, a module Web Worker;
      # dist/worker-host.node.cjs, a worker_threads Worker), which loads the
      # builds as "attnkit" does.
      npx esbuild src/js/web-worker.js --bundle --format=esm --log-level=warning "$define" \
        --outfile=dist/worker.mjs
      npx esbuild src/js/node-worker.js --bundle --format=cjs --platform=node --log-level=warning \
        "$define" --outfile=dist/worker.node.cjs
      cp src/js/node-worker.mjs dist/worker.node.mjs
      npx esbuild src/js/web-worker-host.js --bundle --format=esm --log-level=warning "$define" \
        "${web_builds[@]}" --outfile=dist/worker-host.mjs
      npx esbuild src/js/node-worker-host.js --bundle --format=cjs --platform=node \
        --log-level=warning "$define" "${node_builds[@]}" --outfile=dist/worker-host.node.cjs
      cp src/js/attnkit.d.ts dist/attnkit.d.ts && cp src/js/attnkit.d.ts dist/attnkit.d.cts
      # attnkit/worker's types, over attnkit's (.d.cts: over attnkit.d.cts).
      cp src/js/worker.d.ts dist/worker.d.ts
      sed 's|"\./attnkit\.js"|"./attnkit.cjs"|' src/js/worker.d.ts >dist/worker.d.cts ;;
    *) echo "build: unknown variant '$variant' (native, asan, wasm, wasm-scalar, wasm-threads, fuzz, package)" >&2; return 2 ;;
  esac
}

(($#)) || set -- native
for v in "$@"; do
  echo "== build $v"
  build "$v"
done
