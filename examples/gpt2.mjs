// Open a Hugging Face GPT-2 checkpoint and look inside it (Node).
// Run: node examples/gpt2.mjs PATH-OR-REPO [--sentence TEXT] [--hub URL] [--revision REV]
//   PATH-OR-REPO: a folder holding model.safetensors and config.json, a
//   .safetensors file, an http(s) URL, or a Hub repository id such as
//   openai-community/gpt2 or distilgpt2 (downloaded from the Hub).
// Prints what the checkpoint is, every layer's heads' strongest attention
// from the sentence's last token, the likeliest next tokens and 20 tokens
// generated greedily through the KV cache.
import createAttnkit from "attnkit";

const args = process.argv.slice(2);
const flag = (name, fallback) => {
  const at = args.indexOf(name);
  return at < 0 ? fallback : args.splice(at, 2)[1];
};
const sentence = flag("--sentence", "When Mary and John went to the store, John gave a drink to");
const hubUrl = flag("--hub", undefined);
const revision = flag("--revision", undefined);
const [source] = args;
if (!source) {
  console.error("usage: node examples/gpt2.mjs PATH-OR-REPO [--sentence TEXT] [--hub URL]");
  process.exit(2);
}

const attn = await createAttnkit({ model: true });
const options = { hubUrl, revision };
const info = await attn.checkpointInfo(source, options);
const { config } = info;
const mb = (n) => `${(n / 2 ** 20).toFixed(1)} MB`;
console.log(
  `${source}: ${config.numLayers} layers, ${config.numHeads} heads, d_model ${config.dModel}, ` +
    `${config.vocabSize} tokens, context ${config.maxSeqLen}; ${info.parameters} parameters ` +
    `(${info.dtype}, ${mb(info.totalBytes)} to read, ${mb(info.memoryBytes)} of memory)`,
);

let shown = 0;
const model = await attn.openCheckpoint(source, {
  ...options,
  onProgress: ({ loadedBytes, totalBytes }) => {
    const tenth = Math.floor((10 * loadedBytes) / totalBytes);
    if (tenth > shown)
      process.stdout.write(`${"#".repeat(tenth - shown)}${(shown = tenth) === 10 ? "\n" : ""}`);
  },
});

const tokens = model.tokenizer.encode(sentence);
const piece = (t) => JSON.stringify(model.tokenizer.vocabulary[t]);
console.log(`tokens: ${Array.from(tokens, piece).join(" ")}`);

// Each head's strongest attention from the last token.
const { layers, logits } = model.inspect(tokens);
const T = tokens.length;
layers.forEach(({ weights }, l) => {
  const heads = [];
  for (let h = 0; h < config.numHeads; ++h) {
    const row = weights.data.subarray((h * T + T - 1) * T, (h * T + T) * T);
    let best = 0;
    for (let j = 1; j < T; ++j) if (row[j] > row[best]) best = j;
    heads.push(`h${h} ${piece(tokens[best])} ${row[best].toFixed(2)}`);
  }
  console.log(`layer ${l}: ${heads.join(", ")}`);
});

// The likeliest next tokens: the softmax of the last position's logits.
const last = logits.data.subarray((T - 1) * config.vocabSize, T * config.vocabSize);
const max = Math.max(...last);
let sum = 0;
for (const x of last) sum += Math.exp(x - max);
const top = Array.from(last.keys())
  .sort((a, b) => last[b] - last[a])
  .slice(0, 5);
console.log(
  `next: ${top.map((t) => `${piece(t)} ${(Math.exp(last[t] - max) / sum).toFixed(3)}`).join(", ")}`,
);

const generated = model.generate(sentence, { length: 20, temperature: 0, steps: false });
console.log(`generated: ${JSON.stringify(sentence + generated.text)}`);
model.dispose();
