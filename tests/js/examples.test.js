// The JavaScript examples the README points to run as a user runs them
// (`node examples/<name>.mjs`, importing the package by its name) and say what
// the README says they say.
import test from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import createAttnkit from "attnkit";
import { gpt2Checkpoint } from "./lib/gpt2-checkpoint.js";
import { argmax, gpt2Forward, gpt2Greedy } from "./lib/gpt2-reference.js";

const root = fileURLToPath(new URL("../../", import.meta.url));

function run(name, ...args) {
  const r = spawnSync(process.execPath, [`examples/${name}`, ...args], {
    cwd: root,
    encoding: "utf8",
  });
  assert.equal(r.status, 0, `${name} exited with ${r.status}: ${r.stderr}`);
  return r.stdout;
}

test("quickstart.mjs: a trace, multi-head attention, decoding and an error naming weights.W_Q", () => {
  const out = run("quickstart.mjs");
  assert.match(out, /full causal row 2/);
  assert.match(out, /AttnkitError \[shape_mismatch\] weights\.W_Q: expected 4 rows/);
});

test("gradients.mjs: dQ, dK and dV agree with central differences", () => {
  const out = run("gradients.mjs");
  const lines = out.split("\n").filter((l) => / = .*by differences/.test(l));
  assert.equal(lines.length, 18, "every entry of dQ, dK and dV [3, 2] is checked");
  const worst = Number(out.match(/largest difference: (\S+)/)[1]);
  assert.ok(worst < 1e-3, `largest difference ${worst}`);
});

test("async.mjs: attention, an error, a cancelled call, a moved input and a KV cache in a worker", () => {
  const out = run("async.mjs");
  assert.match(out, /in a worker, on WASM/);
  assert.match(out, /attention: \[512,64\], the caller's Q still holds 32768 values/);
  assert.match(out, /AttnkitError \[shape_mismatch\] V\.data: expected/);
  assert.match(out, /cancelled: AbortError \(aborted\)/);
  assert.match(out, /moved: the caller's array now holds 0 values/);
  assert.match(out, /KV cache: 4 tokens, attend -> \[1,1,64\]/);
});

test("interop.mjs: onnxruntime and tfjs tensors in, and results back into them", () => {
  const out = run("interop.mjs");
  assert.match(out, /ort\.Tensor out: type float32, dims \[4,8\], over r\.data: true/);
  assert.match(out, /tf\.Tensor out: dtype float32, shape \[4,8\]/);
});

test("language.mjs: 30 steps on Moby-Dick lower the validation loss; a sample; the reload", () => {
  const out = run("language.mjs", "--steps", "30");
  assert.match(out, /84 tokens \(the unknown token and 83 characters\)/);
  assert.match(out, /sample after 30 steps:\nCall me Ishmael\. /);
  assert.match(out, /last character, layer \d+ head 3: most weight \d+ back/);
  const [, before, after] = out.match(/validation loss (\S+) -> (\S+) in 30 steps/);
  assert.ok(Number(after) < Number(before) - 0.5, `${before} -> ${after}`);
  assert.match(out, new RegExp(`reloaded: 84 characters, validation loss ${after}`));
});

test("gpt2.mjs: a tiny checkpoint's heads, next tokens and greedy text, as the reference has them", async () => {
  const c = gpt2Checkpoint({ numLayers: 2, dModel: 24, numHeads: 3, vocabSize: 200, seed: 7 });
  const dir = mkdtempSync(join(tmpdir(), "attnkit-gpt2-example-"));
  try {
    writeFileSync(join(dir, "model.safetensors"), c.safetensors);
    writeFileSync(join(dir, "config.json"), c.configJson);
    const out = run("gpt2.mjs", dir, "--sentence", "!#%&");
    assert.match(
      out,
      /2 layers, 3 heads, d_model 24, 200 tokens, context 32; \d+ parameters \(F32/,
    );
    assert.match(out, /tokens: "!" "#" "%" "&"/);
    assert.match(out, /layer 0: h0 ".*?" \d\.\d\d, h1 .*, h2 /);
    assert.match(out, /layer 1: h0 /);
    // The likeliest next token and the greedy text are the reference's.
    const tokens = [0, 2, 4, 5];
    const { logits } = gpt2Forward(c.weights, c.config, tokens);
    const next = argmax(logits, 3 * 200, 200);
    const attn = await createAttnkit({ model: true });
    const model = await attn.openCheckpoint(dir);
    const { tokenizer } = model;
    model.dispose();
    assert.match(
      out,
      new RegExp(`next: ${escape(JSON.stringify(tokenizer.vocabulary[next]))} [01]\\.\\d{3}`),
    );
    const text = tokenizer.decode(gpt2Greedy(c.weights, c.config, tokens, 20));
    assert.ok(out.includes(`generated: ${JSON.stringify("!#%&" + text)}`), out);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

/** `s` with the characters a RegExp reads specially escaped. */
function escape(s) {
  return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
