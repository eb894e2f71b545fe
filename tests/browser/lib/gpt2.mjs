// What the GPT-2 view's browser tests serve: the package tests' stand-in of the Hugging
// Face Hub (tests/js/lib/hub-server.js) with tiny checkpoints, and a stand-in of a large
// checkpoint that exists only as far as it is read: its config.json and safetensors header
// are real, the data after them zeros made up as they are asked for (a test of what the
// page says before a download never downloads it); the models the tests open, and how a
// file is dropped on the view.
import { createServer } from "node:http";
import { gpt2Checkpoint } from "../../js/lib/gpt2-checkpoint.js";

/** Tensor names and shapes of a GPT-2 of these sizes, as Hugging Face's model.safetensors holds them. */
function gpt2Shapes({ numLayers, dModel: E, vocabSize: V, nPositions: P }) {
  const t = [
    ["wte.weight", [V, E]],
    ["wpe.weight", [P, E]],
  ];
  for (let l = 0; l < numLayers; l++) {
    const h = `h.${l}`;
    t.push(
      [`${h}.ln_1.weight`, [E]],
      [`${h}.ln_1.bias`, [E]],
      [`${h}.attn.c_attn.weight`, [E, 3 * E]],
      [`${h}.attn.c_attn.bias`, [3 * E]],
      [`${h}.attn.c_proj.weight`, [E, E]],
      [`${h}.attn.c_proj.bias`, [E]],
      [`${h}.ln_2.weight`, [E]],
      [`${h}.ln_2.bias`, [E]],
      [`${h}.mlp.c_fc.weight`, [E, 4 * E]],
      [`${h}.mlp.c_fc.bias`, [4 * E]],
      [`${h}.mlp.c_proj.weight`, [4 * E, E]],
      [`${h}.mlp.c_proj.bias`, [E]],
    );
  }
  t.push(["ln_f.weight", [E]], ["ln_f.bias", [E]]);
  return t;
}

/**
 * A large F32 GPT-2 checkpoint's config.json and safetensors header (no data):
 * { configJson, header (the file's first bytes), size (the whole file's) }.
 */
export function largeCheckpoint(sizes) {
  const header = {};
  let offset = 0;
  for (const [name, shape] of gpt2Shapes(sizes)) {
    const bytes = 4 * shape.reduce((a, b) => a * b, 1);
    header[`transformer.${name}`] = { dtype: "F32", shape, data_offsets: [offset, offset + bytes] };
    offset += bytes;
  }
  header.__metadata__ = { format: "pt" };
  let json = JSON.stringify(header);
  json += " ".repeat((8 - (json.length % 8)) % 8);
  const head = new Uint8Array(8 + json.length);
  new DataView(head.buffer).setBigUint64(0, BigInt(json.length), true);
  head.set(new TextEncoder().encode(json), 8);
  const config = {
    architectures: ["GPT2LMHeadModel"],
    model_type: "gpt2",
    activation_function: "gelu_new",
    n_embd: sizes.dModel,
    n_layer: sizes.numLayers,
    n_head: sizes.numHeads,
    n_positions: sizes.nPositions,
    n_ctx: sizes.nPositions,
    n_inner: null,
    vocab_size: sizes.vocabSize,
    layer_norm_epsilon: 1e-5,
    scale_attn_weights: true,
    tie_word_embeddings: true,
  };
  return {
    configJson: new TextEncoder().encode(JSON.stringify(config)),
    header: head,
    size: head.length + offset,
  };
}

/** What the large stand-in sends at a time, and at most without a rate. */
const CHUNK = 64 * 1024;
const MAX_SENT = 4 * 1024 * 1024;

const CORS = {
  "access-control-allow-origin": "*",
  "access-control-expose-headers": "content-range, content-length, accept-ranges, x-linked-size",
};

/**
 * A stand-in Hub holding large checkpoints as largeCheckpoint() describes them:
 * `{url}/{repo}/resolve/main/{config.json|model.safetensors}`, Range honoured, the bytes
 * past the header zeros. `add(repo, checkpoint, { rate })`: with a rate (bytes a second)
 * the whole file streams at that pace; without one a response stops after 4 MB.
 * `served(repo)`: the safetensors bytes sent. Resolves to { url, add, served, close }.
 */
export async function startLargeHub() {
  const repos = new Map();
  const sent = new Map();
  const server = createServer((req, res) => {
    const m = /^\/(.+)\/resolve\/[^/]+\/(config\.json|model\.safetensors)$/.exec(
      decodeURIComponent(new URL(req.url, "http://x").pathname),
    );
    if (req.method === "OPTIONS") {
      res.writeHead(204, {
        ...CORS,
        "access-control-allow-methods": "GET, HEAD, OPTIONS",
        "access-control-allow-headers": "range, content-type",
      });
      return res.end();
    }
    const c = m && repos.get(m[1]);
    if (!c) {
      res.writeHead(404, CORS);
      return res.end("not found");
    }
    if (m[2] === "config.json") {
      res.writeHead(200, { ...CORS, "content-type": "application/json" });
      return res.end(c.configJson);
    }
    const r = /^bytes=(\d+)-(\d*)$/.exec(req.headers.range ?? "");
    const begin = r ? Number(r[1]) : 0;
    const end = r && r[2] ? Math.min(c.size, Number(r[2]) + 1) : c.size;
    res.writeHead(r ? 206 : 200, {
      ...CORS,
      "accept-ranges": "bytes",
      "content-type": "application/octet-stream",
      "content-length": String(end - begin),
      ...(r ? { "content-range": `bytes ${begin}-${end - 1}/${c.size}` } : {}),
    });
    if (req.method === "HEAD") return res.end();
    // The header's bytes, then zeros: `rate` bytes a second in chunks of CHUNK; without a
    // rate at most MAX_SENT bytes, then the connection ends (a test that does not confirm
    // never reads further).
    let at = begin;
    const limit = c.rate ? end : Math.min(end, begin + MAX_SENT);
    const more = () => {
      if (res.destroyed) return;
      if (at >= limit) return at >= end ? res.end() : res.socket.destroy();
      const chunk = new Uint8Array(Math.min(CHUNK, limit - at));
      if (at < c.header.length)
        chunk.set(c.header.subarray(at, Math.min(at + chunk.length, c.header.length)));
      at += chunk.length;
      sent.set(m[1], (sent.get(m[1]) ?? 0) + chunk.length);
      res.write(chunk, () => (c.rate ? setTimeout(more, (1000 * CHUNK) / c.rate) : more()));
    };
    more();
  });
  await new Promise((ok) => server.listen(0, "127.0.0.1", ok));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    add: (repo, checkpoint, { rate = 0 } = {}) => repos.set(repo, { ...checkpoint, rate }),
    served: (repo) => sent.get(repo) ?? 0,
    close: () =>
      new Promise((ok) => {
        server.closeAllConnections?.();
        server.close(() => ok());
      }),
  };
}

/** A language model of the Language view's kind (characters), as its weights file. */
export function languageWeights(attn, seed = 1) {
  const text = "When Mary and John went to the store, John gave a drink to Mary. ".repeat(4);
  const { vocabulary } = attn.createTokenizer(text);
  const m = attn.createModel(
    { maxSeqLen: 64, dModel: 32, numLayers: 2, numHeads: 4, dFF: 64, layerNorm: true },
    { seed, vocabulary },
  );
  const bytes = m.exportWeights();
  m.dispose();
  return bytes;
}

/** A tiny GPT-2 checkpoint's model.safetensors (2 layers of 3 heads, GPT-2's vocabulary size). */
export function tinyGpt2() {
  return gpt2Checkpoint({
    numLayers: 2,
    dModel: 24,
    numHeads: 3,
    vocabSize: 50257,
    nPositions: 64,
    seed: 5,
  });
}

/**
 * Run in the page: fetches files, each [name, url], and drops them together on the GPT-2
 * view's panel. Their bytes come from the page's own server (dropArgs), not through the
 * driver: a checkpoint of GPT-2's vocabulary is megabytes.
 */
export async function dropOnPanel(files) {
  const dt = new DataTransfer();
  for (const [name, url] of files) {
    const r = await fetch(url);
    if (!r.ok) throw new Error(`${url}: HTTP ${r.status}`);
    dt.items.add(new File([await r.blob()], name));
  }
  document
    .getElementById("gpt2")
    .dispatchEvent(new DragEvent("drop", { dataTransfer: dt, bubbles: true, cancelable: true }));
  return true;
}

/** dropOnPanel's argument for files, each [name, bytes]: each served by `server` (serve()'s add). */
export const dropArgs = (server, files) =>
  files.map(([name, bytes]) => [name, server.add(name, bytes)]);

/** The largest |Δ| between the page's maps (its hook) and the model's inspect of the same tokens. */
export function mapsDelta(model, sentence) {
  const r = model.inspect(sentence.tokens);
  let worst = 0;
  r.layers.forEach((L, l) => {
    const got = sentence.layers[l].weights;
    for (let i = 0; i < L.weights.data.length; i++)
      worst = Math.max(worst, Math.abs(got[i] - L.weights.data[i]));
  });
  return worst;
}
