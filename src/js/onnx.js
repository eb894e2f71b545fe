// attnkit: a Model as an ONNX file (a ModelProto, docs/onnx.md). The graph is
// docs/model.md's forward, node for node: Embed (Gather + the positions'
// Gather), per layer LayerNormalization, the Q/K/V products, causal attention
// (the opset-23 Attention operator, or MatMul/Softmax/Where below opset 23),
// W_O and the residual, the MLP with GELU (Gelu from opset 20, else its tanh
// formula), the final LayerNormalization and the unembedding. The weights are
// the model's own, as Model.parameters() reads them, stored as initializers
// and copied once, from the model's memory straight into the file's bytes.
// Built as a file of its own (dist/onnx.mjs, onnx.node.cjs) that
// model.exportOnnx() loads on its first call, with the protobuf code
// (@bufbuild/protobuf and ONNX's schema, onnx-buf) bundled into it.
import { create, toBinary } from "@bufbuild/protobuf";
import {
  AttributeProto_AttributeType as AttributeType,
  GraphProtoSchema,
  ModelProtoSchema,
  TensorProtoSchema,
  TensorProto_DataType as DataType,
} from "onnx-buf";
import { ATTENTION_OPSET, GELU_OPSET, checkOnnxOptions, checkOnnxSize } from "./onnx-options.js";
import { LAYER_KEYS } from "./parameter-names.js";
import { version } from "./version.js";

// The IR version each opset came with (onnx/onnx's docs/Versioning.md).
const IR_VERSION = { 17: 8, 18: 8, 19: 9, 20: 9, 21: 10, 22: 10, 23: 11, 24: 12 };

// A node's attributes: each an [AttributeType, value] pair.
const int = (v) => ({ name: "", type: AttributeType.INT, i: BigInt(v) });
const float = (v) => ({ name: "", type: AttributeType.FLOAT, f: v });
const string = (v) => ({ name: "", type: AttributeType.STRING, s: new TextEncoder().encode(v) });
const ints = (v) => ({ name: "", type: AttributeType.INTS, ints: v.map(BigInt) });

/** A tensor type {elemType, shape} whose dims are counts or named (symbolic) sizes. */
function tensorType(elemType, dims) {
  return {
    value: {
      case: "tensorType",
      value: {
        elemType,
        shape: {
          dim: dims.map((d) =>
            typeof d === "number"
              ? { value: { case: "dimValue", value: BigInt(d) } }
              : { value: { case: "dimParam", value: d } },
          ),
        },
      },
    },
  };
}

/** The graph under construction: its nodes and initializers. */
class Graph {
  nodes = [];
  initializers = [];
  #count = 0;
  /** A fresh value name starting with `prefix`. */
  name(prefix) {
    return `${prefix}_${this.#count++}`;
  }
  /**
   * A node `op` over `inputs` ("" for an absent optional input) with
   * `attributes` ({key: int(..), ...}); its outputs are `outputs` (names), or
   * one fresh name, which it returns.
   */
  node(op, inputs, attributes = {}, outputs = null) {
    const id = this.name(op);
    const output = outputs ?? [id];
    this.nodes.push({
      name: id,
      opType: op,
      input: inputs,
      output,
      attribute: Object.entries(attributes).map(([key, a]) => ({ ...a, name: key })),
    });
    return output[0];
  }
  /** An initializer `name` of float32 `data` with `dims`; returns its name. */
  float(name, data, dims) {
    const rawData = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
    this.initializers.push({ name, dims: dims.map(BigInt), dataType: DataType.FLOAT, rawData });
    return name;
  }
  /** An int64 initializer: a vector of `values`, or with `scalar` the one value. */
  int64(prefix, values, { scalar = false } = {}) {
    const name = this.name(prefix);
    const rawData = new Uint8Array(BigInt64Array.from(values, BigInt).buffer);
    const dims = scalar ? [] : [BigInt(values.length)];
    this.initializers.push({ name, dims, dataType: DataType.INT64, rawData });
    return name;
  }
  /** A float32 scalar initializer. */
  scalar(prefix, value) {
    return this.float(this.name(prefix), Float32Array.of(value), []);
  }
}

/** A parameter's matrix as a float initializer; a gain or bias [1, n] as [n]. */
function weight(g, name, m) {
  const vector = m.rows === 1 && /(gain|bias|^b_)/i.test(name.split(".").pop());
  return g.float(name, m.data, vector ? [m.cols] : [m.rows, m.cols]);
}

/** y = x W (+ b): MatMul and, with a bias, Add. */
function linear(g, x, W, b) {
  const y = g.node("MatMul", [x, W]);
  return b ? g.node("Add", [y, b]) : y;
}

/** LayerNormalization over the last axis (gain, bias, the model's epsilon). */
function layerNorm(g, x, gain, bias, c) {
  return g.node("LayerNormalization", [x, gain, bias], {
    axis: int(-1),
    epsilon: float(c.layerNormEpsilon),
  });
}

/** GELU's tanh form: Gelu (opset 20) or u/2 (1 + tanh(sqrt(2/pi) (u + 0.044715 u^3))). */
function gelu(g, u, k) {
  if (k.opset >= GELU_OPSET) return g.node("Gelu", [u], { approximate: string("tanh") });
  const u3 = g.node("Mul", [g.node("Mul", [u, u]), u]);
  const inner = g.node("Mul", [g.node("Add", [u, g.node("Mul", [u3, k.cubic])]), k.sqrt2OverPi]);
  const gate = g.node("Add", [g.node("Tanh", [inner]), k.one]);
  return g.node("Mul", [g.node("Mul", [u, k.half]), gate]);
}

/**
 * Causal attention of Q [B, S, h dK] on K, V [B, S, g dK], after the cached
 * past.key, past.value [B, g, P, dK] with `past` (whose present K and V, [B,
 * g, P + S, dK], are written to the names past.presentKey, past.presentValue):
 * [B, S, h dK]. Opset 23's Attention is one node (its causal frontier with a
 * past is j <= i + P); below it, the same with MatMul, Where and Softmax.
 */
function attention(g, Q, K, V, past, k) {
  const { numHeads: h, numKvHeads: kvh, dK } = k.config;
  const presents = past ? [past.presentKey, past.presentValue] : [];
  if (k.opset >= ATTENTION_OPSET) {
    const inputs = past ? [Q, K, V, "", past.key, past.value] : [Q, K, V];
    const attributes = {
      is_causal: int(1),
      q_num_heads: int(h),
      kv_num_heads: int(kvh),
      scale: float(k.scale),
    };
    return g.node("Attention", inputs, attributes, [g.name("Attention"), ...presents]);
  }
  // [B, S, n dK] -> [B, n, S, dK]
  const heads = (x, n) =>
    g.node("Transpose", [g.node("Reshape", [x, k.splitShape[n]])], { perm: ints([0, 2, 1, 3]) });
  let Kh = heads(K, kvh),
    Vh = heads(V, kvh);
  if (past) {
    Kh = g.node("Concat", [past.key, Kh], { axis: int(2) }, [presents[0]]);
    Vh = g.node("Concat", [past.value, Vh], { axis: int(2) }, [presents[1]]);
  }
  // Query head i reads K/V head floor(i / (h / g)): [B, g, T, dK] -> [B, h, T, dK].
  const repeat = (x) =>
    h === kvh
      ? x
      : g.node("Reshape", [
          g.node("Expand", [g.node("Unsqueeze", [x, k.axis2]), k.repeatShape]),
          k.headsShape,
        ]);
  const KhT = g.node("Transpose", [repeat(Kh)], { perm: ints([0, 1, 3, 2]) });
  let scores = g.node("MatMul", [heads(Q, h), KhT]); // [B, h, S, T]
  if (k.scale !== 1) scores = g.node("Mul", [scores, k.scaleValue]);
  const masked = g.node("Where", [k.visible, scores, k.minusInfinity]);
  const weights = g.node("Softmax", [masked], { axis: int(-1) });
  const z = g.node("MatMul", [weights, repeat(Vh)]); // [B, h, S, dK]
  const merged = g.node("Transpose", [z], { perm: ints([0, 2, 1, 3]) });
  return g.node("Reshape", [merged, k.mergeShape]);
}

/**
 * The constants and shared values of the graph of a model of config `c`: the
 * positions of the new tokens (after the cache's P with `cache`) and, below
 * opset 23, the causal mask [S, P + S] and the shapes the heads take.
 */
function graphValues(g, c, opset, cache) {
  const { numHeads: h, numKvHeads: kvh, dK } = c;
  const k = { config: c, opset, scale: c.scaleBySqrtDk ? 1 / Math.sqrt(dK) : 1 };
  const scalar = (v) => g.int64("const", [v], { scalar: true });
  const zero = !cache || opset < ATTENTION_OPSET ? scalar(0) : null;
  const one = scalar(1);
  const seq = g.node("Gather", [g.node("Shape", ["input_ids"]), one]);
  const past = cache
    ? g.node("Gather", [g.node("Shape", ["past_key_values.0.key"]), scalar(2)])
    : zero;
  const total = g.node("Add", [past, seq]);
  k.positions = g.node("Range", [past, total, one]); // [S]: P .. P + S - 1
  if (opset < GELU_OPSET && c.dFF > 0) {
    k.cubic = g.scalar("const", 0.044715);
    k.sqrt2OverPi = g.scalar("const", Math.sqrt(2 / Math.PI));
    k.one = g.scalar("const", 1);
    k.half = g.scalar("const", 0.5);
  }
  if (opset < ATTENTION_OPSET) {
    // Key j is visible to query i (at position P + i) when j <= P + i.
    const keys = g.node("Range", [zero, total, one]); // [T]
    const rows = g.node("Unsqueeze", [k.positions, g.int64("const", [1])]); // [S, 1]
    k.visible = g.node("LessOrEqual", [keys, rows]); // [S, T]
    k.minusInfinity = g.scalar("const", -Infinity);
    if (k.scale !== 1) k.scaleValue = g.scalar("const", k.scale);
    k.splitShape = { [h]: g.int64("const", [0, 0, h, dK]) };
    k.splitShape[kvh] ??= g.int64("const", [0, 0, kvh, dK]);
    k.mergeShape = g.int64("const", [0, 0, h * dK]);
    if (h !== kvh) {
      k.axis2 = g.int64("const", [2]);
      k.repeatShape = g.int64("const", [1, 1, h / kvh, 1, 1]);
      k.headsShape = g.int64("const", [0, h, -1, dK]);
    }
  }
  return k;
}

/** One layer's nodes on the residual stream x: the attention block, then the MLP (dFF > 0). */
function layerNodes(g, x, l, p, k, cache) {
  const c = k.config;
  // Each weight by its name in the weights file (that of its initializer).
  const w = (name) => {
    const m = p[LAYER_KEYS[name]];
    return m ? weight(g, `layers.${l}.${name}`, m) : null;
  };
  const a = c.layerNorm ? layerNorm(g, x, w("ln_gain"), w("ln_bias"), c) : x;
  const Q = linear(g, a, w("W_Q"), w("b_Q"));
  const K = linear(g, a, w("W_K"), w("b_K"));
  const V = linear(g, a, w("W_V"), w("b_V"));
  const past = cache
    ? {
        key: `past_key_values.${l}.key`,
        value: `past_key_values.${l}.value`,
        presentKey: `present.${l}.key`,
        presentValue: `present.${l}.value`,
      }
    : null;
  const z = attention(g, Q, K, V, past, k);
  x = g.node("Add", [x, linear(g, z, w("W_O"), w("b_O"))]);
  if (c.dFF > 0) {
    const b = layerNorm(g, x, w("ln2_gain"), w("ln2_bias"), c);
    const u = gelu(g, linear(g, b, w("W_1"), w("b_1")), k);
    x = g.node("Add", [x, linear(g, u, w("W_2"), w("b_2"))]);
  }
  return x;
}

/** The graph's inputs and outputs (ValueInfoProto), with the cache's when `cache`. */
function graphInterface(c, cache) {
  const { numKvHeads: kvh, dK, vocabSize } = c;
  const value = (name, elemType, dims) => ({ name, type: tensorType(elemType, dims) });
  const inputs = [value("input_ids", DataType.INT64, ["batch", "sequence"])];
  const outputs = [value("logits", DataType.FLOAT, ["batch", "sequence", vocabSize])];
  if (cache) {
    for (let l = 0; l < c.numLayers; ++l) {
      for (const part of ["key", "value"]) {
        const past = ["batch", kvh, "past_sequence", dK];
        inputs.push(value(`past_key_values.${l}.${part}`, DataType.FLOAT, past));
        const total = ["batch", kvh, "total_sequence", dK];
        outputs.push(value(`present.${l}.${part}`, DataType.FLOAT, total));
      }
    }
  }
  return { inputs, outputs };
}

/** The size of protobuf's varint of n (0 <= n < 2^32). */
function varintSize(n) {
  let size = 1;
  for (; n >= 0x80; n >>>= 7) ++size;
  return size;
}

/** Writes protobuf's varint of n (0 <= n < 2^32) into `out` at `at`; returns the index after it. */
function putVarint(out, at, n) {
  for (; n >= 0x80; n >>>= 7) out[at++] = (n & 0x7f) | 0x80;
  out[at++] = n;
  return at;
}

/** A length-delimited field's key: its number and wire type 2. */
const lengthKey = (field) => (field.number << 3) | 2;

/** The size of length-delimited field `field` holding `length` bytes: key, length, bytes. */
const fieldSize = (field, length) => varintSize(lengthKey(field)) + varintSize(length) + length;

/**
 * toBinary of the fields of message `init` (of `schema`) numbered below
 * `field`, and of those numbered above it: [head, tail].
 */
function around(schema, init, field) {
  const part = (keep) => {
    const fields = Object.entries(init).filter(([key]) => keep(schema.field[key].number));
    return toBinary(schema, create(schema, Object.fromEntries(fields)));
  };
  return [part((n) => n < field.number), part((n) => n > field.number)];
}

/**
 * The bytes of ModelProto `model` (its fields, not its graph) whose graph is
 * `graph` (its fields, not its initializers) with `initializers` (TensorProto
 * fields, each with its rawData), written into one buffer of the file's size.
 * A message's encoding is its fields' one after the other: toBinary writes
 * the fields around the graph (field 7), around the initializers (5) and each
 * tensor's before raw_data (9); the weights are copied from their rawData
 * straight into place. Fields stay in number order, as toBinary writes them:
 * the bytes are toBinary's of the whole message, without its growing buffer.
 */
function encodeModel(model, graph, initializers) {
  const { graph: graphField } = ModelProtoSchema.field;
  const { initializer } = GraphProtoSchema.field;
  const { rawData } = TensorProtoSchema.field;
  const tensors = initializers.map(({ rawData: data, ...fields }) => {
    const [head, tail] = around(TensorProtoSchema, fields, rawData);
    return { head, data, tail, size: head.length + fieldSize(rawData, data.length) + tail.length };
  });
  const [graphHead, graphTail] = around(GraphProtoSchema, graph, initializer);
  const graphSize = tensors.reduce(
    (n, t) => n + fieldSize(initializer, t.size),
    graphHead.length + graphTail.length,
  );
  const [modelHead, modelTail] = around(ModelProtoSchema, model, graphField);
  const out = new Uint8Array(
    modelHead.length + fieldSize(graphField, graphSize) + modelTail.length,
  );
  let at = 0;
  const put = (bytes) => (out.set(bytes, at), (at += bytes.length));
  const key = (field, length) =>
    (at = putVarint(out, putVarint(out, at, lengthKey(field)), length));
  put(modelHead);
  key(graphField, graphSize);
  put(graphHead);
  for (const t of tensors) {
    key(initializer, t.size);
    put(t.head);
    key(rawData, t.data.length);
    put(t.data);
    put(t.tail);
  }
  put(graphTail);
  put(modelTail);
  return out;
}

/**
 * The ONNX file of `model` (a Model of the model layer) as a Uint8Array.
 * `tokenizer`: "characters" (a language model: its vocabulary goes in the
 * metadata), "gpt2" (GPT-2's BPE) or null (a task model). Options: opset
 * (MIN_OPSET .. MAX_OPSET, default 23), cache (the KV cache as inputs and
 * outputs). `parameters()`: the model's parameters as Model.parameters()
 * gives them, or views of the model's memory (no copies), which the writer
 * reads last, after every other call into the model, and copies into the file.
 */
export function exportOnnx(model, tokenizer, options, parameters = () => model.parameters()) {
  const { opset, cache } = checkOnnxOptions(options);
  checkOnnxSize(model);
  const c = model.config;
  const metadata = {
    producer: `attnkit ${version}`,
    config: JSON.stringify(c),
    trained_steps: String(model.trainedSteps),
  };
  if (tokenizer) metadata.tokenizer = tokenizer;
  if (tokenizer === "characters") metadata.vocabulary = JSON.stringify(model.vocabulary);
  const p = parameters();
  const g = new Graph();
  const k = graphValues(g, c, opset, cache);
  const embedding = weight(g, "token_embedding", p.tokenEmbedding);
  const tokens = g.node("Gather", [embedding, "input_ids"]); // [B, S, d_model]
  const positions = g.node("Gather", [
    weight(g, "position_embedding", p.positionEmbedding),
    k.positions,
  ]); // [S, d_model]
  let x = g.node("Add", [tokens, positions]);
  p.layers.forEach((layer, l) => (x = layerNodes(g, x, l, layer, k, cache)));
  if (c.layerNorm)
    x = layerNorm(
      g,
      x,
      weight(g, "final_gain", p.finalGain),
      weight(g, "final_bias", p.finalBias),
      c,
    );
  const unembedding = c.tiedUnembedding
    ? g.node("Transpose", [embedding], { perm: ints([1, 0]) })
    : weight(g, "unembedding", p.unembedding);
  g.node("MatMul", [x, unembedding], {}, ["logits"]);
  const { inputs, outputs } = graphInterface(c, cache);
  const modelFields = {
    irVersion: BigInt(IR_VERSION[opset]),
    opsetImport: [{ domain: "", version: BigInt(opset) }],
    producerName: "attnkit",
    producerVersion: version,
    docString: "A transformer trained or loaded by attnkit (docs/onnx.md)",
    metadataProps: Object.entries(metadata).map(([key, value]) => ({ key, value })),
  };
  const graph = { name: "attnkit", node: g.nodes, input: inputs, output: outputs };
  return encodeModel(modelFields, graph, g.initializers);
}
