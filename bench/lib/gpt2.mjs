// The GPT-2 benchmark's shared parts (bench/wasm/gpt2.mjs, gpt2-memory.mjs): GPT-2
// small's checkpoint with seeded random weights, written once into build/bench/gpt2
// as Hugging Face writes one (model.safetensors, F32, and config.json, by the tests'
// writer tests/js/lib/gpt2-checkpoint.js at GPT-2 small's sizes; no Hub is
// reached); prompts of exact token counts; and the engines that run in a
// process of their own (bench/gpt2_torch.py, attnkit_gpt2_bench), one command
// per line on stdin and one JSON line back.
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { gpt2Checkpoint } from "../../tests/js/lib/gpt2-checkpoint.js";
import { mobyDick } from "./engines.mjs";

/** GPT-2 small (openai-community/gpt2): 124 M parameters, 498 MB in float32. */
export const GPT2_SMALL = Object.freeze({
  numLayers: 12,
  dModel: 768,
  numHeads: 12,
  vocabSize: 50257,
  nPositions: 1024,
});
// GPT-2's initialisation scale for the matrices; the writer's own spreads for the
// embeddings (0.5, 0.2), biases (0.1) and LayerNorm gains (1 + N(0, 0.1^2)).
const WEIGHTS = { ...GPT2_SMALL, scale: 0.02, seed: 44, dtype: "F32" };

/** build/bench/gpt2/: the checkpoint, the ONNX model, attnkit's weights file, the checks' logits. */
export const gpt2Dir = fileURLToPath(new URL("../../build/bench/gpt2/", import.meta.url));

/**
 * The benchmark's checkpoint folder (model.safetensors + config.json), written when
 * missing or made with other settings (a stamp file keeps them). Returns its path.
 */
export function gpt2Checkpoint124M() {
  const stamp = `${gpt2Dir}checkpoint.json`,
    want = JSON.stringify(WEIGHTS);
  if (
    existsSync(`${gpt2Dir}model.safetensors`) &&
    existsSync(stamp) &&
    readFileSync(stamp, "utf8") === want
  )
    return gpt2Dir;
  mkdirSync(gpt2Dir, { recursive: true });
  console.error("gpt2: writing GPT-2 small's checkpoint (seeded random weights) into", gpt2Dir);
  const ckpt = gpt2Checkpoint(WEIGHTS);
  writeFileSync(`${gpt2Dir}model.safetensors`, ckpt.safetensors);
  writeFileSync(`${gpt2Dir}config.json`, ckpt.configJson);
  writeFileSync(stamp, want);
  return gpt2Dir;
}

/**
 * Prompts of exactly `lengths` tokens of `tokenizer` (GPT-2's), cut from Moby-Dick:
 * { T: { ids: Int32Array, text } } where encode(text) is ids (a cut that BPE would
 * merge differently moves on by a token).
 */
export function prompts(tokenizer, lengths) {
  const book = mobyDick();
  const all = tokenizer.encode(book.slice(20000, 20000 + 8 * Math.max(...lengths) + 1000));
  const out = {};
  for (const T of lengths) {
    for (let start = 0; ; ++start) {
      const ids = all.slice(start, start + T);
      if (ids.length < T) throw new Error(`gpt2: no prompt of ${T} tokens that encodes back`);
      const text = tokenizer.decode(ids);
      const again = tokenizer.encode(text);
      if (again.length === T && again.every((x, i) => x === ids[i])) {
        out[T] = { ids, text };
        break;
      }
    }
  }
  return out;
}

/**
 * An engine in a child process: `command` with `args` (and `env` added), its
 * first line the engine's description ({engine, version?, threads, ...}).
 * call(line) -> the reply's JSON; close() ends it.
 */
export async function childEngine(command, args, env = {}) {
  const child = spawn(command, args, {
    env: { ...process.env, ...env },
    stdio: ["pipe", "pipe", "inherit"],
  });
  const lines = createInterface({ input: child.stdout });
  const waiting = [];
  let ended = null;
  lines.on("line", (line) => waiting.shift()?.resolve(line));
  child.on("exit", (code, signal) => {
    ended = new Error(`${command} ${args.join(" ")}: ended (${signal ?? `exit ${code}`})`);
    for (const w of waiting.splice(0)) w.reject(ended);
  });
  const next = () =>
    new Promise((resolve, reject) => {
      if (ended) reject(ended);
      else waiting.push({ resolve, reject });
    });
  const reply = async () => {
    const r = JSON.parse(await next());
    if (r.error) throw new Error(`${command}: ${r.error}`);
    return r;
  };
  const hello = await reply();
  return {
    hello,
    pid: child.pid,
    call(line) {
      child.stdin.write(`${line}\n`);
      return reply();
    },
    close() {
      if (ended) return Promise.resolve();
      child.stdin.end("quit\n");
      return new Promise((resolve) => child.on("exit", resolve));
    },
  };
}
