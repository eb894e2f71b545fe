// GPT-2 small's speed against its peers (issue #44's targets; npm run bench -- --only
// gpt2): a GPT-2 of GPT-2 small's exact shapes (12 layers, 12 heads, d_model 768,
// vocabulary 50,257, context 1024) with seeded random weights, written once as Hugging
// Face's model.safetensors + config.json (bench/lib/gpt2.mjs), and every engine on
// those weights:
//   attnkit (wasm SIMD128, Node)  the package as a user runs it: createAttnkit({ model:
//                                 true }), openCheckpoint(folder), model.sampler(prompt,
//                                 { temperature: 0 }) and sampler.next() (one thread:
//                                 the model builds have no threads)
//   attnkit (native)              the C++ API (Generator) in bench/native/gpt2.cc, on
//                                 the package's exportWeights() of the opened model
//   onnxruntime-web (wasm, Node)  one thread, SIMD128, on the ONNX graph that
//                                 torch.onnx.export writes of bench/gpt2_torch.py's model
//                                 (new tokens and a KV cache in, the last logits and the
//                                 grown cache out; build/bench/gpt2/gpt2.onnx)
//   PyTorch (CPU)                 bench/gpt2_torch.py reading the same safetensors, one
//                                 thread (pinned to this process's core), and every
//                                 thread (not pinned; timed by the wall clock)
// The work, the same in every engine (what generation needs, as HF's generate does it):
//   prefill T      the prompt's T tokens through every layer into the KV cache and the
//                  last position's logits (attnkit: creating the sampler, which also
//                  encodes the prompt's text with GPT-2's BPE)
//   generate P     after a prefill of P tokens (untimed), 32 greedy tokens, each one
//                  forward of a token through the cache (attnkit's also returns every
//                  layer's attention for the token, as the page shows it)
// Before any timing every engine's logits after a 128-token prompt and after 8 greedy
// tokens are compared with attnkit wasm's (max |Δ|; the same 8 tokens required).
// Paired rounds: each round runs every workload on every engine, in an order that turns
// by one each round, so that all meet the machine in the same state; per engine the
// median over rounds, and per pair the median of the per-round ratios with the lowest and
// highest round. Times are CPU time of the engine's process (Node's for the in-process
// engines: run with --expose-gc --single-threaded-gc, a collection before each timed
// call), except PyTorch on every thread (wall time). The load average is recorded.
//
// Usage: node --expose-gc --single-threaded-gc bench/wasm/gpt2.mjs [--full] [--quick]
//          [--rounds N] > bench/results/gpt2.json
//   default: prefill T = 16 and 128, generation after 16; --full: prefill T = 16, 128,
//   512, 1024, generation after 16 and 512.
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, statSync, writeFileSync } from "node:fs";
import os from "node:os";
import { fileURLToPath } from "node:url";
import { createAttnkit } from "../../dist/attnkit.node.mjs";
import { cpuModel, wasmPeak, wasmReadLimit } from "../lib/engines.mjs";
import { childEngine, gpt2Checkpoint124M, gpt2Dir, prompts } from "../lib/gpt2.mjs";
import { loadOrtWeb, ortWebInfo, ortWebOptions } from "../lib/peers.mjs";
import { cpuMs, maxDiff, median } from "../lib/stats.mjs";

const args = process.argv.slice(2);
const full = args.includes("--full"),
  quick = args.includes("--quick");
const option = (name) => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
const ROUNDS = Number(option("--rounds") ?? (quick ? 2 : full ? 5 : 3));
const PREFILL = full ? [16, 128, 512, 1024] : [16, 128];
const GENERATE_AFTER = full ? [16, 512] : [16];
const NEW_TOKENS = 32,
  CHECK_PROMPT = 128,
  CHECK_TOKENS = 8;
// Calls per engine per round: enough for ~0.1 s at the smallest prompt.
const repsOf = (T) => (T <= 16 ? 3 : 1);
const root = fileURLToPath(new URL("../..", import.meta.url));
const log = (...xs) => console.error("gpt2:", ...xs);

// --- the checkpoint, attnkit wasm, and the files the other engines read ---------------
const dir = gpt2Checkpoint124M();
const fileBytes = statSync(`${dir}model.safetensors`).size;
const attn = await createAttnkit({ model: true });
let t0 = performance.now();
const model = await attn.openCheckpoint(dir);
const openMs = performance.now() - t0;
log(`attnkit opened ${fileBytes} bytes in ${openMs.toFixed(0)} ms`);
const weightsFile = `${gpt2Dir}gpt2.atk`;
writeFileSync(weightsFile, model.exportWeights());
const P = prompts(model.tokenizer, [...new Set([...PREFILL, ...GENERATE_AFTER, CHECK_PROMPT])]);
const onnxFile = `${gpt2Dir}gpt2.onnx`;
if (
  !existsSync(onnxFile) ||
  statSync(onnxFile).mtimeMs < statSync(`${dir}model.safetensors`).mtimeMs
) {
  log("torch.onnx.export into", onnxFile);
  t0 = performance.now();
  execFileSync(
    "/usr/bin/python3",
    [`${root}bench/gpt2_torch.py`, "--checkpoint", dir, "--export-onnx", onnxFile],
    {
      stdio: ["ignore", "inherit", "inherit"],
    },
  );
  log(`exported in ${((performance.now() - t0) / 1e3).toFixed(0)} s`);
}

// --- the engines: { name, clock, info, prefill(prompt, reps), generate(prompt, n, reps),
// check(prompt, n) -> {first, last, tokens}, close() } -------------------------------
const times = (cpu, wall) => ({ cpuMs: cpu, wallMs: wall });
// reps calls of fn, each after a collection: their CPU and wall ms.
async function timed(reps, fn) {
  const cpu = [],
    wall = [];
  for (let r = 0; r < reps; ++r) {
    globalThis.gc?.();
    const c0 = cpuMs(),
      w0 = performance.now();
    await fn();
    cpu.push(cpuMs() - c0);
    wall.push(performance.now() - w0);
  }
  return times(cpu, wall);
}
const argmax = (xs) => {
  let best = 0;
  for (let i = 1; i < xs.length; ++i) if (xs[i] > xs[best]) best = i;
  return best;
};

function attnkitWasm() {
  const sampler = (prompt) => model.sampler(prompt.text, { temperature: 0 });
  return {
    name: "attnkit (wasm SIMD128, Node)",
    clock: "cpu",
    info: { version: attn.version, target: attn.target, openMs },
    prefill: (prompt, reps) => timed(reps, () => sampler(prompt).dispose()),
    async generate(prompt, n, reps) {
      let tokens = [];
      const cpu = [],
        wall = [];
      for (let r = 0; r < reps; ++r) {
        const s = sampler(prompt);
        tokens = [];
        const t = await timed(1, () => {
          for (let i = 0; i < n; ++i) tokens.push(s.next().token);
        });
        s.dispose();
        cpu.push(...t.cpuMs);
        wall.push(...t.wallMs);
      }
      return { ...times(cpu, wall), tokens };
    },
    async check(prompt, n) {
      const s = sampler(prompt);
      const steps = Array.from({ length: n + 1 }, () => s.next());
      s.dispose();
      return {
        first: steps[0].logits,
        last: steps[n].logits,
        tokens: steps.slice(0, n).map((x) => x.token),
      };
    },
    close() {},
  };
}

async function ortWeb() {
  const ort = await loadOrtWeb();
  t0 = performance.now();
  const session = await ort.InferenceSession.create(onnxFile, ortWebOptions());
  const loadMs = performance.now() - t0;
  const {
    n_layer: L,
    n_head: H,
    n_embd: E,
  } = JSON.parse(readFileSync(`${dir}config.json`, "utf8"));
  const emptyPast = () => new ort.Tensor("float32", new Float32Array(0), [L, 2, H, 0, E / H]);
  const run = (ids, past) =>
    session.run({
      input_ids: new ort.Tensor(
        "int64",
        BigInt64Array.from(ids, (x) => BigInt(x)),
        [ids.length],
      ),
      past,
    });
  // The prefill, then n greedy tokens (timed apart when `t` is given): logits and tokens.
  async function generate(prompt, n, t) {
    let out = await run(prompt.ids, emptyPast());
    const first = out.logits.data;
    const tokens = [];
    const step = async () => {
      for (let i = 0; i < n; ++i) {
        tokens.push(argmax(out.logits.data));
        out = await run([tokens.at(-1)], out.present);
      }
    };
    if (t) t.push(await timed(1, step));
    else await step();
    return { first, last: out.logits.data, tokens };
  }
  return {
    name: "onnxruntime-web (wasm, Node)",
    clock: "cpu",
    info: { ...(await ortWebInfo(ort)), loadMs },
    prefill: (prompt, reps) => timed(reps, () => run(prompt.ids, emptyPast())),
    async generate(prompt, n, reps) {
      const t = [];
      let tokens;
      for (let r = 0; r < reps; ++r) ({ tokens } = await generate(prompt, n, t));
      return {
        ...times(
          t.flatMap((x) => x.cpuMs),
          t.flatMap((x) => x.wallMs),
        ),
        tokens,
      };
    },
    check: (prompt, n) => generate(prompt, n),
    close: () => session.release(),
  };
}

// An engine of its own process (childEngine): the commands of bench/gpt2_torch.py.
async function childOf(name, clock, command, commandArgs, env) {
  const child = await childEngine(command, commandArgs, env);
  const ids = (prompt) => Array.from(prompt.ids).join(",");
  return {
    name,
    clock,
    info: child.hello,
    prefill: (prompt, reps) => child.call(`prefill ${reps} ${ids(prompt)}`),
    generate: (prompt, n, reps) => child.call(`generate ${n} ${reps} ${ids(prompt)}`),
    async check(prompt, n) {
      const file = `${gpt2Dir}logits-${child.pid}.f32`;
      const { tokens } = await child.call(`check ${n} ${file} ${ids(prompt)}`);
      const buf = readFileSync(file);
      const both = new Float32Array(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.length));
      const V = both.length / 2;
      return { first: both.subarray(0, V), last: both.subarray(V), tokens };
    },
    close: () => child.close(),
  };
}

const cores = os.cpus().length;
const python = "/usr/bin/python3",
  torchArgs = [`${root}bench/gpt2_torch.py`, "--checkpoint", dir, "--serve", "--threads"];
const engines = [attnkitWasm(), await ortWeb()];
const nativeBin = `${root}build/bench/attnkit_gpt2_bench`;
if (existsSync(nativeBin))
  engines.push(await childOf("attnkit (native)", "cpu", nativeBin, ["--weights", weightsFile]));
else log(`${nativeBin} is not built: attnkit native left out`);
engines.push(
  await childOf("PyTorch (CPU), 1 thread", "cpu", python, [...torchArgs, "1"], {
    OMP_NUM_THREADS: "1",
    OPENBLAS_NUM_THREADS: "1",
  }),
);
// Every core: taskset widens the child's affinity past this process's pinned core.
if (cores > 1)
  engines.push(
    await childOf(
      `PyTorch (CPU), ${cores} threads`,
      "wall",
      "taskset",
      ["-c", `0-${cores - 1}`, python, ...torchArgs, "0"],
      {},
    ),
  );

// --- the check: the same logits and tokens as attnkit wasm's -------------------------
const check = {};
let reference = null;
for (const e of engines) {
  const r = await e.check(P[CHECK_PROMPT], CHECK_TOKENS);
  reference ??= r;
  const scale = reference.first.reduce((m, x) => Math.max(m, Math.abs(x)), 0);
  check[e.name] = {
    maxAbsDiffPrefill: maxDiff(r.first, reference.first),
    maxAbsDiffAfterTokens: maxDiff(r.last, reference.last),
    maxAbsLogit: scale,
    sameTokens: r.tokens.every((t, i) => t === reference.tokens[i]),
  };
  const c = check[e.name];
  log(
    `${e.name}: logits max |Δ| ${c.maxAbsDiffPrefill.toExponential(2)} after the prompt, ` +
      `${c.maxAbsDiffAfterTokens.toExponential(2)} after ${CHECK_TOKENS} tokens (max |logit| ${scale.toFixed(1)}); ` +
      `tokens ${c.sameTokens ? "equal" : `DIFFER: ${r.tokens} against ${reference.tokens}`}`,
  );
  if (!c.sameTokens || !(Math.max(c.maxAbsDiffPrefill, c.maxAbsDiffAfterTokens) <= 1e-3 * scale))
    throw new Error(`gpt2: ${e.name} does not compute attnkit's logits (see above)`);
}

// --- paired rounds ----------------------------------------------------------------------
const workloads = [
  ...PREFILL.map((T) => ({ kind: "prefill", T, tokens: T })),
  ...GENERATE_AFTER.map((T) => ({ kind: "generate", T, tokens: NEW_TOKENS })),
];
for (const w of workloads)
  w.engines = Object.fromEntries(engines.map((e) => [e.name, { cpuMs: [], wallMs: [] }]));
const peak = wasmPeak();
// A token reads every weight once: the limit of reading that many bytes of wasm
// memory bounds every engine's generation.
const weightBytes = Math.ceil((model.parameterCount * 4) / 128) * 128;
const peaks = [],
  readLimits = [],
  loads = [];
for (let round = 0; round < ROUNDS; ++round) {
  loads.push(os.loadavg()[0]);
  if (peak) peaks.push(peak.measure());
  const gbs = wasmReadLimit(weightBytes);
  if (gbs) readLimits.push(gbs);
  for (const w of workloads) {
    for (let k = 0; k < engines.length; ++k) {
      const e = engines[(k + round) % engines.length];
      const reps = repsOf(w.T);
      const t =
        w.kind === "prefill"
          ? await e.prefill(P[w.T], reps)
          : await e.generate(P[w.T], NEW_TOKENS, 1);
      const slot = w.engines[e.name];
      slot.cpuMs.push(median(t.cpuMs));
      slot.wallMs.push(median(t.wallMs));
    }
  }
  const summary = workloads
    .map(
      (w) =>
        `${w.kind} ${w.T}: ${engines.map((e) => w.engines[e.name][e.clock === "cpu" ? "cpuMs" : "wallMs"].at(-1).toFixed(0)).join("/")} ms`,
    )
    .join("; ");
  log(`round ${round + 1}/${ROUNDS} (load ${loads.at(-1).toFixed(1)}): ${summary}`);
}
loads.push(os.loadavg()[0]);
for (const e of engines) await e.close();
const memoryBytes = attn.memoryBytes(),
  parameters = model.parameterCount,
  config = model.config;
model.dispose();

const commit = execFileSync("git", ["describe", "--always", "--dirty"], {
  cwd: root,
  encoding: "utf8",
}).trim();
console.log(
  JSON.stringify(
    {
      commit,
      full,
      quick,
      rounds: ROUNDS,
      newTokens: NEW_TOKENS,
      checkpoint: { bytes: fileBytes, parameters, config },
      cpu: cpuModel(),
      cores,
      node: process.version,
      loadAverage: loads,
      wasmPeakGflops: peaks,
      wasmRead: { bytes: weightBytes, gbPerSecond: readLimits },
      attnkitWasmMemoryBytes: memoryBytes,
      engines: engines.map((e) => ({ name: e.name, clock: e.clock, info: e.info })),
      check: { prompt: CHECK_PROMPT, tokens: CHECK_TOKENS, engines: check },
      workloads,
    },
    null,
    1,
  ),
);
