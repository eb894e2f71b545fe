// GPT-2's A/B in WebAssembly: two builds of the package (each a dist/ folder:
// its attnkit.node.mjs and the model build beside it) in one Node process, each
// opening the GPT-2 benchmark's checkpoint (bench/lib/gpt2.mjs: GPT-2 small's
// shapes, seeded weights), then paired rounds, the order turning each round:
// the prefill of 16 and 128 tokens (a sampler made on the prompt, as
// bench/wasm/gpt2.mjs times it) and 16 greedy tokens after each (sampler.next,
// per token). CPU time of this process. Prints per workload the medians of A
// and B and the median of the rounds' ratios A / B (B's speed) with the lowest
// and highest, and whether both builds gave the same logits, bit for bit.
// Usage: node --expose-gc --single-threaded-gc bench/wasm/gpt2_ab.mjs DIST_A DIST_B [ROUNDS]
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { gpt2Checkpoint124M, prompts } from "../lib/gpt2.mjs";
import { cpuMs, median } from "../lib/stats.mjs";

const [distA, distB, roundsArg] = process.argv.slice(2);
if (!distB) {
  console.error("usage: node bench/wasm/gpt2_ab.mjs DIST_A DIST_B [ROUNDS]");
  process.exit(2);
}
const ROUNDS = Number(roundsArg ?? 5),
  NEW_TOKENS = 16;
const dir = gpt2Checkpoint124M();
const open = async (dist) => {
  const { createAttnkit } = await import(pathToFileURL(resolve(dist, "attnkit.node.mjs")).href);
  const attn = await createAttnkit({ model: true });
  return attn.openCheckpoint(dir);
};
const sides = { A: await open(distA), B: await open(distB) };
const P = prompts(sides.A.tokenizer, [16, 128]);

// CPU ms of fn, after a collection.
const timed = (fn) => {
  globalThis.gc?.();
  const t0 = cpuMs();
  const out = fn();
  return { ms: cpuMs() - t0, out };
};
const times = {};
const add = (name, side, ms) => (times[name] ??= { A: [], B: [] })[side].push(ms);
const logits = { A: [], B: [] };
for (let round = 0; round < ROUNDS; ++round) {
  for (const side of round % 2 ? ["B", "A"] : ["A", "B"]) {
    const model = sides[side];
    for (const T of [16, 128]) {
      add(
        `prefill_${T}`,
        side,
        timed(() => model.sampler(P[T].text, { temperature: 0 }).dispose()).ms,
      );
      const s = model.sampler(P[T].text, { temperature: 0 });
      const { ms, out } = timed(() => Array.from({ length: NEW_TOKENS }, () => s.next()));
      s.dispose();
      add(`token_after_${T}`, side, ms / NEW_TOKENS);
      if (round === 0) logits[side].push(out[0].logits, out.at(-1).logits);
    }
  }
}
const same = logits.A.every(
  (x, i) => x.length === logits.B[i].length && x.every((v, j) => Object.is(v, logits.B[i][j])),
);
for (const [name, { A, B }] of Object.entries(times)) {
  const ratios = A.map((a, i) => a / B[i]);
  console.log(
    `${name.padEnd(18)} A ${median(A).toFixed(1).padStart(8)} ms  B ${median(B).toFixed(1).padStart(8)} ms` +
      `  B/A speed ${median(ratios).toFixed(3)} [${Math.min(...ratios).toFixed(3)}, ${Math.max(...ratios).toFixed(3)}]`,
  );
}
console.log(`logits bit-identical: ${same}`);
