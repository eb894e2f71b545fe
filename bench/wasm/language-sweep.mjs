// The language model's presets chosen by measurement: a handful of configurations trained on
// Moby-Dick through the npm package (wasm SIMD128, one thread), each in its own Node process
// pinned to one core, one after the other. Per configuration: the CPU time of training
// (process.cpuUsage of the process, run with --single-threaded-gc; the validation passes are
// not counted) and the steps to a validation loss of 2.2 and 2.0 nats/char, the loss after
// 60 s of CPU, the last loss, a sample, the load average beside it. Validation every
// EVAL_EVERY steps on the dataset's 128 fixed windows of the configuration's context (so a
// shorter context is scored on shorter windows). Model seed 1, data seed 1234, as
// bench/wasm/language.mjs. A run stops at 2.0 (with --go-on: goes on, for the loss after 180 s
// of CPU), at its CPU budget or at its step cap.
//
// Usage: node bench/wasm/language-sweep.mjs [--only name,name] [--cpu-core 1] [--budget S] [--go-on]
//          > build/language-sweep.json  (a dated record of a run goes to bench/results/history.md)
//        node --single-threaded-gc bench/wasm/language-sweep.mjs --run name   (one, JSON out)
import os from "node:os";
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { mobyDick } from "../lib/engines.mjs";

const args = process.argv.slice(2);
const option = (name) => (args.includes(name) ? args[args.indexOf(name) + 1] : undefined);
const EVAL_EVERY = 50,
  TARGETS = [2.2, 2.0],
  MODEL_SEED = 1,
  DATA_SEED = 1234,
  VALID_WINDOWS = 128,
  TAB_SECONDS = 60,
  LIMIT_SECONDS = 180;
const goOn = args.includes("--go-on"); // train to the budget, past 2.0

// AdamW as nanoGPT's CPU recipe sets it (bench/wasm/language.mjs), with each
// configuration's learning rate and schedule on top.
const ADAM = { beta1: 0.9, beta2: 0.99, epsilon: 1e-8, weightDecay: 0.1, clipNorm: 1 };
const gpt = (numLayers, dModel, dFF, seqLen, numHeads = 4) => ({
  maxSeqLen: seqLen,
  dModel,
  numLayers,
  numHeads,
  dFF,
  layerNorm: true,
});
const schedule = (learningRate, warmupSteps, decaySteps, minLearningRate = learningRate / 10) => ({
  learningRate,
  warmupSteps,
  decaySteps,
  minLearningRate,
});

// name -> { config, seqLen, batch, adam }
export const CONFIGS = {
  nanogpt: {
    config: gpt(4, 128, 512, 64),
    seqLen: 64,
    batch: 12,
    adam: schedule(1e-3, 100, 2000, 1e-4),
  },
  "lr2e-3": {
    config: gpt(4, 128, 512, 64),
    seqLen: 64,
    batch: 12,
    adam: schedule(2e-3, 100, 1500),
  },
  "lr3e-3": {
    config: gpt(4, 128, 512, 64),
    seqLen: 64,
    batch: 12,
    adam: schedule(3e-3, 100, 1200),
  },
  "3L-lr3e-3": {
    config: gpt(3, 128, 512, 64),
    seqLen: 64,
    batch: 12,
    adam: schedule(3e-3, 100, 1200),
  },
  "d96-lr3e-3": {
    config: gpt(4, 96, 384, 64),
    seqLen: 64,
    batch: 12,
    adam: schedule(3e-3, 100, 1200),
  },
  "ctx32-b16-lr3e-3": {
    config: gpt(4, 128, 512, 32),
    seqLen: 32,
    batch: 16,
    adam: schedule(3e-3, 100, 1200),
  },
  "3L-d96-ff3-lr3e-3": {
    config: gpt(3, 96, 288, 64),
    seqLen: 64,
    batch: 12,
    adam: schedule(3e-3, 100, 1500),
  },
  "b8-lr3e-3": {
    config: gpt(4, 128, 512, 64),
    seqLen: 64,
    batch: 8,
    adam: schedule(3e-3, 100, 1500),
  },
  "2L-d96-ctx32-b16": {
    config: gpt(2, 96, 384, 32),
    seqLen: 32,
    batch: 16,
    adam: schedule(3e-3, 50, 1500, 3e-4),
  },
  "3L-d96-ctx32-b16": {
    config: gpt(3, 96, 384, 32),
    seqLen: 32,
    batch: 16,
    adam: schedule(3e-3, 100, 1200),
  },
  // The page's smaller and larger presets: their loss after a minute of CPU.
  small: {
    config: gpt(2, 64, 256, 32),
    seqLen: 32,
    batch: 16,
    adam: schedule(3e-3, 50, 1500, 3e-4),
    budget: 65,
  },
  large: {
    config: gpt(6, 192, 768, 128, 6),
    seqLen: 128,
    batch: 12,
    adam: schedule(1e-3, 100, 4000, 1e-4),
    budget: 90,
  },
};

const cpuSeconds = (c) => (c.user + c.system) / 1e6;

/** Trains one configuration; returns its record. */
async function run(name, maxBudget, maxSteps) {
  const c = CONFIGS[name];
  if (!c) throw new Error(`--run: no configuration "${name}" (${Object.keys(CONFIGS).join(", ")})`);
  const budget = goOn ? maxBudget : Math.min(maxBudget, c.budget ?? Infinity);
  const { createAttnkit } = await import("../../dist/attnkit.node.mjs");
  const ak = await createAttnkit({ model: true });
  const data = ak.createTextDataset(mobyDick(), {
    seqLen: c.seqLen,
    seed: DATA_SEED,
    validationWindows: VALID_WINDOWS,
  });
  const model = ak.createModel(c.config, { seed: MODEL_SEED, vocabulary: data.vocabulary });
  const trainer = ak.createTrainer(model, { ...ADAM, ...c.adam });
  const loads = [os.loadavg()[0]];
  const curve = [[0, 0, data.validationLoss(model)]]; // [step, CPU s, validation loss]
  const reached = {};
  let atTab = null,
    atLimit = null;
  let cpu = 0;
  let step = 0;
  while (step < maxSteps && cpu < budget && (goOn || !(2.0 in reached))) {
    const c0 = process.cpuUsage();
    trainer.step(data.next(c.batch));
    cpu += cpuSeconds(process.cpuUsage(c0));
    if (++step % EVAL_EVERY !== 0) continue;
    const loss = data.validationLoss(model);
    curve.push([step, +cpu.toFixed(2), +loss.toFixed(4)]);
    loads.push(os.loadavg()[0]);
    if (atTab === null && cpu >= TAB_SECONDS)
      atTab = { step, cpuSeconds: +cpu.toFixed(1), loss: +loss.toFixed(4) };
    if (atLimit === null && cpu >= LIMIT_SECONDS)
      atLimit = { step, cpuSeconds: +cpu.toFixed(1), loss: +loss.toFixed(4) };
    for (const t of TARGETS)
      if (!(t in reached) && loss <= t) reached[t] = { step, cpuSeconds: +cpu.toFixed(1) };
  }
  const { text } = model.generate("Call me Ishmael. ", {
    length: 200,
    temperature: 0.8,
    topK: 20,
    seed: 7,
  });
  const record = {
    name,
    seqLen: c.seqLen,
    batch: c.batch,
    config: c.config,
    adam: { ...ADAM, ...c.adam },
    parameters: model.parameterCount,
    msPerStep: +((1000 * cpu) / step).toFixed(1),
    tokensPerCpuSecond: Math.round((step * c.batch * c.seqLen) / cpu),
    to2_2: reached[2.2] ?? null,
    to2_0: reached[2.0] ?? null,
    at60s: atTab,
    at180s: atLimit,
    trained: { steps: step, cpuSeconds: +cpu.toFixed(1) },
    last: { step: curve.at(-1)[0], cpuSeconds: curve.at(-1)[1], loss: curve.at(-1)[2] }, // validation
    load: { min: Math.min(...loads), max: Math.max(...loads) },
    sample: text,
    curve,
  };
  for (const x of [trainer, model, data]) x.dispose();
  return record;
}

if (option("--run")) {
  const r = await run(
    option("--run"),
    Number(option("--budget") ?? 240),
    Number(option("--max-steps") ?? 3000),
  );
  process.stdout.write(JSON.stringify(r) + "\n");
} else {
  const names = option("--only")?.split(",") ?? Object.keys(CONFIGS);
  const core = option("--cpu-core") ?? "1";
  const budget = option("--budget") ?? "240";
  const self = fileURLToPath(import.meta.url);
  const results = [];
  for (const name of names) {
    const out = execFileSync(
      "taskset",
      [
        "-c",
        core,
        process.execPath,
        "--single-threaded-gc",
        self,
        "--run",
        name,
        "--budget",
        budget,
      ].concat(goOn ? ["--go-on"] : []),
      { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"], maxBuffer: 1 << 26 },
    );
    const r = JSON.parse(out);
    r.core = core;
    results.push(r);
    const t = (x) => (x ? `${x.cpuSeconds} s (${x.step})` : "-");
    console.error(
      `${name}: 2.2 ${t(r.to2_2)}, 2.0 ${t(r.to2_0)}, 60 s ${r.at60s?.loss ?? "-"}, ` +
        `${r.msPerStep} ms/step, load ${r.load.min}-${r.load.max}`,
    );
  }
  const node = process.version;
  process.stdout.write(
    JSON.stringify(
      {
        date: new Date().toISOString(),
        node,
        cpu: os.cpus()[0].model,
        core,
        budget: +budget,
        results,
      },
      null,
      1,
    ) + "\n",
  );
}
