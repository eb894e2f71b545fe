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
// --init-sweep: the default preset's initialisation chosen by measurement, natively (the fastest
// engine; step counts do not depend on the machine's load): attnkit_language_bench --preset
// default --init NAME --seed S --steps N, one process after the other at nice 10, on Moby-Dick
// and on a second English text of its size (the State of the Union addresses from 1985 on). Per
// text, initialisation and model seed: the initial validation loss, the steps to a validation
// loss of 2.0 nats/char (linearly between the evaluations around it) and the validation loss at
// fixed steps (the same held-out windows as above, every 50 steps). The initialisations are the
// native bench's kInits (docs/model.md, "Initialisation").
//
// Usage: node bench/wasm/language-sweep.mjs [--only name,name] [--cpu-core 1] [--budget S] [--go-on]
//          > build/language-sweep.json  (a dated record of a run goes to bench/results/history.md)
//        node --single-threaded-gc bench/wasm/language-sweep.mjs --run name   (one, JSON out)
//        node bench/wasm/language-sweep.mjs --init-sweep [--native build/bench/attnkit_language_bench]
//          [--inits a,b] [--seeds 1,2] [--texts moby-dick,sotu] [--steps 1500]
//          [--settings "lr=5e-3,beta1=0.7;beta1=0.8"]  (the optimiser sweep: each group of
//          attnkit_language_bench's --set KEY=VALUE against each initialisation)
//          > build/init-sweep.json  (the table on stderr)
//        node bench/wasm/language-sweep.mjs --init-table a.json[,b.json]  (the runs' table again)
import os from "node:os";
import path from "node:path";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { mobyDick, stateOfTheUnion } from "../lib/engines.mjs";

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

const TEXTS = { "moby-dick": mobyDick, sotu: stateOfTheUnion };
const INITS = [
  "gpt2",
  "normal-0.02",
  "torch",
  "torch-emb-0.02",
  "fan-in",
  "fan-in-res",
  "fan-in-emb-0.3",
  "fan-in-emb-0.1",
  "fan-in-emb-0.02",
  "fan-in-res-emb-0.02",
];
const AT_STEPS = [250, 500, 1000, 1500];

/** The step at which a run's validation curve crosses `target`, linearly between evaluations. */
function crossing({ validation, initialValidation }, target) {
  const curve = [[0, initialValidation], ...validation];
  const i = curve.findIndex(([, v]) => v <= target);
  if (i < 1) return null;
  const [[s0, v0], [s1, v1]] = [curve[i - 1], curve[i]];
  return Math.round(s0 + ((s1 - s0) * (v0 - target)) / (v0 - v1));
}

/** The initialisation sweep's table (markdown): per initialisation and text, over the seeds. */
function initTable(results) {
  const rank = (init) => (INITS.includes(init) ? INITS.indexOf(init) : INITS.length);
  const inits = [...new Set(results.map((r) => r.init))].sort((a, b) => rank(a) - rank(b));
  const texts = [...new Set(results.map((r) => r.text))];
  const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const head = ["initialisation"];
  for (const t of texts) {
    head.push(`${t}: initial loss`, `${t}: steps to 2.0`, `${t}: loss at ${AT_STEPS.join(" / ")}`);
  }
  const rows = [head, head.map(() => "---")];
  for (const init of inits) {
    const row = [init];
    for (const text of texts) {
      const runs = results.filter((r) => r.init === init && r.text === text);
      const at = (step) =>
        mean(runs.map((r) => r.validation.find(([s]) => s === step)?.[1] ?? NaN));
      row.push(
        mean(runs.map((r) => r.initialValidation)).toFixed(2),
        runs.map((r) => crossing(r, 2.0) ?? "-").join(", "),
        AT_STEPS.map((s) => at(s).toFixed(3)).join(" / "),
      );
    }
    rows.push(row);
  }
  return rows.map((r) => `| ${r.join(" | ")} |`).join("\n");
}

function initSweep() {
  const binary = option("--native") ?? "build/bench/attnkit_language_bench";
  const inits = option("--inits")?.split(",") ?? INITS;
  const seeds = (option("--seeds") ?? "1,2").split(",");
  const texts = (option("--texts") ?? "moby-dick,sotu").split(",");
  const steps = option("--steps") ?? String(AT_STEPS.at(-1));
  // Each ";"-separated group of KEY=VALUE,... changes the preset's training settings
  // (attnkit_language_bench --set); "" (the default) trains the preset as it is.
  const settings = (option("--settings") ?? "").split(";");
  const dir = mkdtempSync(path.join(os.tmpdir(), "attnkit-init-sweep-"));
  const results = [];
  try {
    for (const text of texts) {
      if (!TEXTS[text]) throw new Error(`--texts: no text "${text}" (${Object.keys(TEXTS)})`);
      const file = path.join(dir, `${text}.txt`);
      writeFileSync(file, TEXTS[text]());
      for (const [init, group] of inits.flatMap((i) => settings.map((g) => [i, g]))) {
        for (const seed of seeds) {
          const argv = [binary, "--text", file, "--preset", "default", "--init", init];
          argv.push("--seed", seed, "--steps", steps);
          for (const set of group ? group.split(",") : []) argv.push("--set", set);
          const out = execFileSync("nice", ["-n", "10", ...argv], {
            encoding: "utf8",
            stdio: ["ignore", "pipe", "ignore"],
            maxBuffer: 1 << 26,
          });
          const r = { text, ...JSON.parse(out) };
          if (group) r.init = `${init} ${group}`;
          if (r.error) throw new Error(`${init} seed ${seed} on ${text}: ${r.error}`);
          results.push(r);
          console.error(
            `${text} ${init} seed ${seed}: initial ${r.initialValidation.toFixed(3)}, ` +
              `2.0 at ${r["stepsTo2.0"] || "-"}, last ${r.validation.at(-1)[1].toFixed(3)}`,
          );
        }
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  console.error(initTable(results));
  const commit = execFileSync("git", ["describe", "--always", "--dirty"], { encoding: "utf8" });
  const record = { date: new Date().toISOString(), commit: commit.trim(), cpu: os.cpus()[0].model };
  process.stdout.write(JSON.stringify({ ...record, steps: +steps, results }, null, 1) + "\n");
}

if (args.includes("--init-sweep")) {
  initSweep();
} else if (option("--init-table")) {
  const files = option("--init-table").split(",");
  console.log(initTable(files.flatMap((f) => JSON.parse(readFileSync(f, "utf8")).results)));
} else if (option("--run")) {
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
