// onnxruntime and tfjs tensors in and out (docs/api-js.md, "Interop").
// Needs onnxruntime-common (or onnxruntime-web / -node, which re-export its
// Tensor) and @tensorflow/tfjs-core with a backend. Run: node examples/interop.mjs
import createAttnkit from "attnkit";
import { Tensor } from "onnxruntime-common"; // what `ort.Tensor` is in onnxruntime-web / -node
import * as tf from "@tensorflow/tfjs-core";
import "@tensorflow/tfjs-backend-cpu";

const attn = await createAttnkit();
const T = 4,
  d = 8;
const values = () => Float32Array.from({ length: T * d }, (_, i) => Math.sin(i));

// onnxruntime: float32 tensors in (their data is read as it is), a tensor back.
const q = new Tensor("float32", values(), [T, d]);
const r = attn.attention(q, q, q, { causal: true });
const ortOut = new Tensor("float32", r.data, r.shape);
console.log(
  `ort.Tensor out: type ${ortOut.type}, dims [${ortOut.dims}], over r.data: ${ortOut.data === r.data}`,
);

// tfjs: tensors in (read with dataSync(): on the cpu backend, the tensor's own array).
await tf.setBackend("cpu");
const x = tf.tensor2d(values(), [T, d]);
const m = attn.multiHeadAttentionQKV(x, x, x, { numHeads: 2 }, { causal: true });
const tfOut = tf.tensor(m.data, m.shape);
console.log(`tf.Tensor out: dtype ${tfOut.dtype}, shape [${tfOut.shape}]`);
tf.dispose([x, tfOut]);
