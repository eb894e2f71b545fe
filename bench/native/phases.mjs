// Where a GPT training step's time goes, and how much of it stays on one
// thread (#45): samples `attnkit_train_bench --profile SHAPE THREADS STEPS`
// with perf (CPU-clock samples with DWARF call stacks), once on one thread and
// once on a pool of two, and prints per phase:
//   - its share of the one-thread step and its ms per step;
//   - its serial share: the samples of the caller's thread (the pool's
//     thread 0) in that phase outside ThreadPool::Run, over the one-thread
//     step's samples. That is the work no other thread can take (checks,
//     copies, allocations, sums in order, the calls below the pool's cut-off)
//     and bounds two threads' speed (Amdahl): 1 / (s + (1 - s) / 2).
// CPU samples count only a thread's own time on a core, so both figures hold
// on a loaded machine, where a two-thread wall time does not.
// Each phase is the outermost of its functions on a sample's stack (the
// model's products, the core's attention, the row kernels, the loss, AdamW).
// Usage: node bench/native/phases.mjs [--steps N] [--bin PATH] [--detail] [SHAPE ...]
//   --detail: per phase, the functions its serial samples are in.
//   SHAPE: tiny, small, default, nanogpt (kGptShapes in bench/native/train.cc;
//   default: default nanogpt). Needs perf (linux-perf) and the benchmarks'
//   build (build/bench, as npm run bench makes it; --bin another).
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const kFrequency = 2999; // samples per second of CPU time

// Phase name, and the functions (as perf names them: demangled, without
// their arguments) whose calls make it.
const kPhases = [
  [
    "products",
    [
      /attnkit::internal::(Product|ProductTransposedA|RunProjectionBackward|RunMatMul\w*|RunPackPanels)\b/,
      /attnkit::internal::\(anonymous namespace\)::BandedProduct\b/,
    ],
  ],
  ["attention forward", [/attnkit::MultiHeadAttentionQKVForTraining\b/, /RunAttentionJob\w*\b/]],
  [
    "attention backward",
    [
      /attnkit::MultiHeadAttentionQKVBackward\b/,
      /N_\w+::(MultiHeadBackwardT|MultiBackward|GroupBackward|SplitGroupsBackward)\b/,
    ],
  ],
  ["LayerNorm forward", [/kernels::LayerNorm\b/, /::LayerNormT\b/]],
  ["LayerNorm backward", [/kernels::LayerNormBackward\b/, /::LayerNormBackward\w*T\b/]],
  ["GELU forward and backward", [/kernels::Gelu(Backward)?\b/, /::Gelu(Backward)?T\b/]],
  ["cross-entropy (loss, argmax)", [/attnkit::model::Loss\b/, /::SoftmaxCrossEntropyT\b/]],
  ["AdamW", [/attnkit::model::AdamW::Step\b/, /::(AdamWUpdate|SumOfSquares)T\b/]],
  ["embedding forward and backward", [/kernels::Embed(Backward)?\b/, /::Embed(Backward)?T\b/]],
  ["residual adds", [/kernels::AddTo\b/, /::AddToT\b/]],
  ["W_QKV fused (copies)", [/attnkit::model::FuseQKV\b/]],
];
const kStep = /attnkit::model::(TrainStep|Trainer::Step)\b/;
const kRun = /attnkit::ThreadPool::Run\b/;

function parseArgs(argv) {
  const args = { steps: 150, bin: "build/bench/attnkit_train_bench", shapes: [], detail: false };
  for (let i = 0; i < argv.length; ++i) {
    if (argv[i] === "--steps") args.steps = Number(argv[++i]);
    else if (argv[i] === "--detail") args.detail = true;
    else if (argv[i] === "--bin") args.bin = argv[++i];
    else args.shapes.push(argv[i]);
  }
  if (args.shapes.length === 0) args.shapes = ["default", "nanogpt"];
  return args;
}

/** The samples of one run: [{ tid, pid, frames: [symbol, leaf first] }]. */
function sample(bin, shape, threads, steps, dir) {
  const data = join(dir, `${shape}-${threads}.data`);
  const out = execFileSync(
    "perf",
    [
      "record",
      "-q",
      "-e",
      "cpu-clock",
      "-F",
      String(kFrequency),
      "--call-graph",
      "dwarf,32768",
      "-o",
      data,
      "--",
      bin,
      "--profile",
      shape,
      String(threads),
      String(steps),
    ],
    { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] },
  );
  void out;
  const script = execFileSync(
    "perf",
    ["script", "-i", data, "-F", "pid,tid,ip,sym", "--demangle"],
    {
      encoding: "utf8",
      maxBuffer: 1 << 30,
      stdio: ["ignore", "pipe", "ignore"],
    },
  );
  const samples = [];
  let current = null;
  for (const line of script.split("\n")) {
    const head = line.match(/^\s*(\d+)\/(\d+)\s*$/);
    if (head) {
      current = { pid: Number(head[1]), tid: Number(head[2]), frames: [] };
      samples.push(current);
    } else if (current && line.trim()) {
      // "  ip symbol+offset"
      current.frames.push(line.trim().replace(/^[0-9a-f]+\s+/, ""));
    } else {
      current = null;
    }
  }
  return samples;
}

/** The phase of a sample: its outermost matching function, else "other". */
function phaseOf(frames) {
  for (let f = frames.length - 1; f >= 0; --f) {
    const name = frames[f].replace(/^.*?(attnkit::)/, "$1");
    for (const [phase, patterns] of kPhases) {
      if (patterns.some((p) => p.test(name))) return phase;
    }
  }
  return "other (checks, copies, allocations, the pool's hand-over)";
}

const inStep = (s) => s.frames.some((f) => kStep.test(f));
// Whether a sample waits: its innermost function of attnkit's is the pool's
// (polling or sleeping for a task or for the last task to finish).
const kWaiting = /attnkit::ThreadPool::|attnkit::\(anonymous namespace\)::(Poll|Relax)/;
const waiting = (s) => {
  const own = s.frames.find((f) => /attnkit::/.test(f));
  return own !== undefined && kWaiting.test(own);
};

/** The functions most serial samples of each phase are in (their innermost of attnkit's, or the leaf). */
function printDetail(serial, total) {
  const byPhase = new Map();
  for (const s of serial) {
    const phase = phaseOf(s.frames);
    const own = s.frames.find((f) => /attnkit::/.test(f)) ?? s.frames[0] ?? "?";
    // Lambdas' and std::function's long names cut short.
    const short = (f) => f.replace(/\s+\(inlined\)/g, "").replace(/<.*$/, "<...>");
    const leaf = `${short(s.frames[0] ?? "?")} in ${short(own)}`;
    if (!byPhase.has(phase)) byPhase.set(phase, new Map());
    const m = byPhase.get(phase);
    m.set(leaf, (m.get(leaf) ?? 0) + 1);
  }
  for (const [phase, m] of byPhase) {
    console.log(`\nSerial in ${phase}:`);
    for (const [leaf, n] of [...m.entries()].sort((a, b) => b[1] - a[1]).slice(0, 8)) {
      console.log(`  ${((100 * n) / total).toFixed(2)}%  ${leaf}`);
    }
  }
}

function report(bin, shape, steps, dir, detail) {
  const one = sample(bin, shape, 1, steps, dir).filter(inStep);
  const two = sample(bin, shape, 2, steps, dir);
  const serial = two.filter(
    (s) => s.tid === s.pid && inStep(s) && !s.frames.some((f) => kRun.test(f)),
  );
  // The work of both threads: the caller's in the step, the worker's in its
  // tasks (the worker's stacks start at its loop, not at the step).
  const work = two.filter((s) => !waiting(s) && (s.tid === s.pid ? inStep(s) : true));
  const count = (samples) => {
    const m = new Map();
    for (const s of samples) {
      const p = phaseOf(s.frames);
      m.set(p, (m.get(p) ?? 0) + 1);
    }
    return m;
  };
  const total = one.length;
  const byPhase = count(one),
    serialByPhase = count(serial),
    workByPhase = count(work);
  const msPerSample = 1e3 / kFrequency / steps;
  const rows = [...byPhase.entries()].sort((a, b) => b[1] - a[1]);
  const pct = (n) => ((100 * n) / total).toFixed(1);
  console.log(
    `\n### ${shape}: ${(total * msPerSample).toFixed(2)} ms of CPU per step on one thread`,
  );
  console.log(`(${steps} steps sampled at ${kFrequency} Hz: ${total} samples on one thread)\n`);
  console.log(
    "| phase | share of the step | ms per step | serial with 2 threads | work of 2 threads |",
  );
  console.log("|---|---:|---:|---:|---:|");
  for (const [phase, n] of rows) {
    const s = serialByPhase.get(phase) ?? 0,
      w = workByPhase.get(phase) ?? 0;
    console.log(
      `| ${phase} | ${pct(n)}% | ${(n * msPerSample).toFixed(3)} | ${pct(s)}% | ${pct(w)}% |`,
    );
  }
  console.log(
    "\n(Serial: the caller's samples outside the pool's Run; work: both threads' samples " +
      "but their waits; both as shares of the one-thread step.)",
  );
  const s = serial.length / total;
  const w = work.length / total;
  console.log(
    `\nSerial share s = ${(100 * s).toFixed(1)}% of the one-thread step: two threads at most ` +
      `${(1 / (s + (1 - s) / 2)).toFixed(2)}x (Amdahl). Work of two threads ` +
      `${(100 * w).toFixed(1)}% of one thread's: at most ${(1 / (s + (w - s) / 2)).toFixed(2)}x ` +
      "with it split evenly.",
  );
  if (detail) printDetail(serial, total);
}

const args = parseArgs(process.argv.slice(2));
const dir = mkdtempSync(join(tmpdir(), "attnkit-phases-"));
try {
  for (const shape of args.shapes) report(args.bin, shape, args.steps, dir, args.detail);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
