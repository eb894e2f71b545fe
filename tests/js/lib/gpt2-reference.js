// A float64 reference of GPT-2's forward, written from GPT-2's definition
// (Radford et al. 2019; Hugging Face's GPT2LMHeadModel), not from attnkit's
// code: token + position embeddings; per block x += attn(LN_1(x)),
// x += mlp(LN_2(x)); LN_f; logits = x head^T. Plain ES module (no Node
// builtins), usable by the package's tests and the page's.
//
// `weights`: a Map of Hugging Face names without the "transformer." prefix ->
// float values ("wte.weight" [V, E], "h.0.attn.c_attn.weight" [E, 3E] ...;
// Conv1D weights [in, out]); "lm_head.weight" [V, E] when untied.
// `config`: config.json's object (n_embd, n_head, n_layer, layer_norm_epsilon,
// n_inner, tie_word_embeddings).

/** LayerNorm of each row of x [T, E]: (x - mean) / sqrt(var + eps) * gain + bias. */
function layerNorm(x, T, E, gain, bias, eps) {
  const out = new Float64Array(T * E);
  for (let t = 0; t < T; ++t) {
    let mean = 0;
    for (let i = 0; i < E; ++i) mean += x[t * E + i];
    mean /= E;
    let variance = 0;
    for (let i = 0; i < E; ++i) variance += (x[t * E + i] - mean) ** 2;
    variance /= E;
    const inv = 1 / Math.sqrt(variance + eps);
    for (let i = 0; i < E; ++i) out[t * E + i] = (x[t * E + i] - mean) * inv * gain[i] + bias[i];
  }
  return out;
}

/** Conv1D: x [T, n] W [n, m] + b [m]. */
function conv1d(x, T, n, W, b, m) {
  const out = new Float64Array(T * m);
  for (let t = 0; t < T; ++t) {
    for (let j = 0; j < m; ++j) out[t * m + j] = b[j];
    for (let i = 0; i < n; ++i) {
      const xi = x[t * n + i];
      for (let j = 0; j < m; ++j) out[t * m + j] += xi * W[i * m + j];
    }
  }
  return out;
}

/** gelu_new: 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))). */
const geluNew = (x) => 0.5 * x * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (x + 0.044715 * x ** 3)));

/**
 * Causal multi-head attention over qkv [T, 3E] (Q | K | V, heads side by
 * side in each): the merged heads [T, E] and each head's weights [H, T, T].
 */
function causalAttention(qkv, T, E, H) {
  const dk = E / H;
  const out = new Float64Array(T * E);
  const weights = new Float64Array(H * T * T);
  const scale = 1 / Math.sqrt(dk);
  for (let h = 0; h < H; ++h) {
    for (let i = 0; i < T; ++i) {
      const row = new Float64Array(i + 1);
      let max = -Infinity;
      for (let j = 0; j <= i; ++j) {
        let s = 0;
        for (let d = 0; d < dk; ++d)
          s += qkv[i * 3 * E + h * dk + d] * qkv[j * 3 * E + E + h * dk + d];
        row[j] = s * scale;
        max = Math.max(max, row[j]);
      }
      let sum = 0;
      for (let j = 0; j <= i; ++j) sum += row[j] = Math.exp(row[j] - max);
      for (let j = 0; j <= i; ++j) {
        const w = row[j] / sum;
        weights[(h * T + i) * T + j] = w;
        for (let d = 0; d < dk; ++d)
          out[i * E + h * dk + d] += w * qkv[j * 3 * E + 2 * E + h * dk + d];
      }
    }
  }
  return { out, weights };
}

/**
 * GPT-2's forward over `tokens`: {logits [T, V] (Float64Array, row-major),
 * attention (per layer, Float64Array [H, T, T])}.
 */
export function gpt2Forward(weights, config, tokens) {
  const E = config.n_embd,
    H = config.n_head,
    L = config.n_layer,
    F = config.n_inner ?? 4 * E,
    eps = config.layer_norm_epsilon ?? 1e-5;
  const w = (name) => {
    const v = weights.get(name);
    if (!v) throw new Error(`gpt2Forward: no tensor ${name}`);
    return v;
  };
  const T = tokens.length;
  const wte = w("wte.weight"),
    wpe = w("wpe.weight");
  let x = new Float64Array(T * E);
  tokens.forEach((token, t) => {
    for (let i = 0; i < E; ++i) x[t * E + i] = wte[token * E + i] + wpe[t * E + i];
  });
  const attention = [];
  for (let l = 0; l < L; ++l) {
    const p = (name) => w(`h.${l}.${name}`);
    const a = layerNorm(x, T, E, p("ln_1.weight"), p("ln_1.bias"), eps);
    const qkv = conv1d(a, T, E, p("attn.c_attn.weight"), p("attn.c_attn.bias"), 3 * E);
    const { out, weights: aw } = causalAttention(qkv, T, E, H);
    attention.push(aw);
    const o = conv1d(out, T, E, p("attn.c_proj.weight"), p("attn.c_proj.bias"), E);
    for (let i = 0; i < T * E; ++i) x[i] += o[i];
    const m = layerNorm(x, T, E, p("ln_2.weight"), p("ln_2.bias"), eps);
    const hidden = conv1d(m, T, E, p("mlp.c_fc.weight"), p("mlp.c_fc.bias"), F).map(geluNew);
    const y = conv1d(hidden, T, F, p("mlp.c_proj.weight"), p("mlp.c_proj.bias"), E);
    for (let i = 0; i < T * E; ++i) x[i] += y[i];
  }
  x = layerNorm(x, T, E, w("ln_f.weight"), w("ln_f.bias"), eps);
  const tied = config.tie_word_embeddings ?? true;
  const head = tied || !weights.has("lm_head.weight") ? wte : w("lm_head.weight");
  const V = head.length / E;
  const logits = new Float64Array(T * V);
  for (let t = 0; t < T; ++t)
    for (let v = 0; v < V; ++v) {
      let s = 0;
      for (let i = 0; i < E; ++i) s += x[t * E + i] * head[v * E + i];
      logits[t * V + v] = s;
    }
  return { logits, attention };
}

/** The index of the largest of `n` values from `offset` (the first on ties). */
export function argmax(values, offset = 0, n = values.length - offset) {
  let best = 0;
  for (let i = 1; i < n; ++i) if (values[offset + i] > values[offset + best]) best = i;
  return best;
}

/** Greedy decoding: the `n` argmax tokens after `prompt`, by full forwards. */
export function gpt2Greedy(weights, config, prompt, n) {
  const tokens = [...prompt];
  const V = config.vocab_size;
  for (let s = 0; s < n; ++s) {
    const { logits } = gpt2Forward(weights, config, tokens);
    tokens.push(argmax(logits, (tokens.length - 1) * V, V));
  }
  return tokens.slice(prompt.length);
}
