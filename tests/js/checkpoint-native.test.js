// The C++ checkpoint reader (include/attnkit/checkpoint_file.h, through
// examples/gpt2.cc: build/native/attnkit_gpt2, built by scripts/build.sh
// native before this suite runs) against the package's openCheckpoint on the
// same files, written by tests/js/lib/gpt2-checkpoint.js: the next token's
// five likeliest ids and their probabilities after the same ids. F32, F16 and
// BF16; prefixed or not; buffers; the head absent, stored beside a tied
// config, or untied; with config.json and without (the heads given).
import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { createAttnkit } from "attnkit";
import { gpt2Checkpoint } from "./lib/gpt2-checkpoint.js";

const NATIVE = fileURLToPath(new URL("../../build/native/attnkit_gpt2", import.meta.url));
const TOKENS = [5, 17, 3, 42, 8, 61];
// wasm against native: the same maths, rounded in other orders (and fused
// multiply-adds natively).
const PROBABILITY_TOLERANCE = 1e-5;

const CASES = [
  { numLayers: 2, dModel: 24, numHeads: 3, vocabSize: 200, dtype: "F32", seed: 3 },
  {
    numLayers: 1,
    dModel: 16,
    numHeads: 2,
    vocabSize: 100,
    dtype: "F16",
    prefix: true,
    buffers: true,
    head: "tied",
    seed: 4,
  },
  {
    numLayers: 3,
    dModel: 32,
    numHeads: 4,
    vocabSize: 150,
    dtype: "BF16",
    head: "untied",
    seed: 5,
    withoutConfig: true,
  },
];

/** The 5 likeliest ids of a row of logits and their probabilities (softmax). */
function top5(row) {
  const max = Math.max(...row);
  let sum = 0;
  for (const v of row) sum += Math.exp(v - max);
  const ids = [...row.keys()].sort((a, b) => row[b] - row[a] || a - b).slice(0, 5);
  return ids.map((id) => ({ id, p: Math.exp(row[id] - max) / sum }));
}

describe("checkpoint files: the C++ reader agrees with the package", () => {
  let attn, dir;
  before(async () => {
    attn = await createAttnkit({ model: true });
    dir = mkdtempSync(join(tmpdir(), "attnkit-native-checkpoint-"));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  for (const [i, { withoutConfig, ...options }] of CASES.entries()) {
    it(`${options.dtype}, ${options.numLayers} layers, head ${options.head ?? "absent"}${withoutConfig ? ", no config.json" : ""}`, async () => {
      assert.ok(existsSync(NATIVE), `${NATIVE}: expected it built (bash scripts/build.sh native)`);
      const c = gpt2Checkpoint(options);
      const folder = join(dir, `case-${i}`);
      const file = join(folder, "model.safetensors");
      mkdirSync(folder);
      writeFileSync(file, c.safetensors);
      if (!withoutConfig) writeFileSync(join(folder, "config.json"), c.configJson);
      const heads = withoutConfig ? ["--num-heads", String(options.numHeads)] : [];

      const model = await attn.openCheckpoint(
        file,
        withoutConfig ? { numHeads: options.numHeads } : undefined,
      );
      const { logits } = model.inspect(TOKENS);
      const V = logits.cols;
      const want = top5(Array.from(logits.data.subarray((TOKENS.length - 1) * V)));
      model.dispose();

      const out = execFileSync(NATIVE, [folder, ...TOKENS.map(String), ...heads], {
        encoding: "utf8",
        stdio: ["ignore", "pipe", "pipe"],
      });
      const got = out
        .trim()
        .split("\n")
        .map((line) => {
          const [id, p] = line.split(" ");
          return { id: Number(id), p: Number(p) };
        });
      assert.deepEqual(
        got.map((g) => g.id),
        want.map((w) => w.id),
        "the five likeliest ids, in order",
      );
      for (const [k, g] of got.entries()) {
        assert.ok(
          Math.abs(g.p - want[k].p) <= PROBABILITY_TOLERANCE,
          `id ${g.id}: native probability ${g.p}, package ${want[k].p}`,
        );
      }
    });
  }

  it("a bad file: the C++ reader names it and exits 1", () => {
    assert.ok(existsSync(NATIVE), `${NATIVE}: expected it built (bash scripts/build.sh native)`);
    const file = join(dir, "bad.safetensors");
    writeFileSync(file, "not a checkpoint");
    assert.throws(
      () => execFileSync(NATIVE, [file, "1"], { encoding: "utf8", stdio: "pipe" }),
      (e) => e.status === 1 && e.stderr.includes(`${file}: expected a safetensors header length`),
    );
  });
});
