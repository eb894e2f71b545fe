#!/usr/bin/env python3
"""Writes the ONNX models the benchmark's onnxruntime peers run (bench/models/).

One head, d = 64; T is a symbolic dimension, so one model serves every T.
Inputs query, key, value: float32 [1, T, 64]; output: float32 [1, T, 64].

  mha.onnx             com.microsoft MultiHeadAttention, num_heads = 1
  mha_causal.onnx      the same with unidirectional = 1 (each query sees keys <= itself)
  matmul.onnx          the plain graph: Softmax(Q K^T * 1/sqrt(64)) V
  matmul_causal.onnx   the same plus a causal additive mask (-1e9 above the diagonal),
                       made inside the graph (ConstantOfShape [T, T] + Trilu), so the
                       graph takes the same three inputs as every other engine
  matmul_causal_mask.onnx  the same with the additive mask as a fourth input, mask [T, T]
                       (the benchmark fills it once per shape; it keeps the faster of the two)

Two more workloads (the "other shapes" of the benchmark), 8 heads of d = 64, d_model = 512:
  mha_layer.onnx       a multi-head self-attention layer: x [1, T, 512] -> x W_Q, x W_K,
                       x W_V -> MultiHeadAttention (num_heads = 8) -> W_O; output [1, T, 512]
  matmul_layer.onnx    the same layer as plain MatMul/Reshape/Transpose/Softmax nodes
                       The weights W_Q, W_K, W_V, W_O [512, 512] are initializers (constants,
                       as in a real model, so onnxruntime may prepack them): the benchmark's
                       weights, WEIGHT_SEEDS of bench/wasm/bench.mjs's generator, which
                       layer_weight() reproduces.
  mha_decode.onnx      decoding: query [1, 1, 512] against key, value [1, N, 512] (a KV cache
                       of N tokens), MultiHeadAttention num_heads = 8; output [1, 1, 512]
  matmul_decode.onnx   the same with MatMul/Softmax on a cache kept head-major: query
                       [1, 8, 1, 64], key_t [1, 8, 64, N] (K transposed), value [1, 8, N, 64];
                       output [1, 8, 1, 64]

Written with Debian's python3-onnx (apt-get install python3-onnx); nothing is downloaded.
Usage: python3 bench/make_models.py [OUT_DIR]   (default: bench/models next to this file)
"""
import array
import math
import os
import sys

import onnx
from onnx import TensorProto, helper

D = 64
OPSET = 17


def io(name):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, [1, "T", D])


def save(graph, path, ms_domain=False):
    opsets = [helper.make_opsetid("", OPSET)]
    if ms_domain:
        opsets.append(helper.make_opsetid("com.microsoft", 1))
    model = helper.make_model(graph, opset_imports=opsets, producer_name="attnkit-bench")
    if not ms_domain:  # the checker does not know com.microsoft operators
        onnx.checker.check_model(model, full_check=True)
    onnx.save(model, path)


def mha(causal):
    node = helper.make_node(
        "MultiHeadAttention", ["query", "key", "value"], ["output"], domain="com.microsoft",
        num_heads=1, unidirectional=1 if causal else 0)
    return helper.make_graph([node], "mha_causal" if causal else "mha",
                             [io("query"), io("key"), io("value")], [io("output")])


def matmul(causal, mask_input=False):
    scale = helper.make_tensor("scale", TensorProto.FLOAT, [], [1.0 / math.sqrt(D)])
    nodes = [
        helper.make_node("Transpose", ["key"], ["key_t"], perm=[0, 2, 1]),
        helper.make_node("MatMul", ["query", "key_t"], ["qk"]),
        helper.make_node("Mul", ["qk", "scale"], ["scores"]),
    ]
    inits = [scale]
    logits = "scores"
    inputs = [io("query"), io("key"), io("value")]
    if mask_input:
        inputs.append(helper.make_tensor_value_info("mask", TensorProto.FLOAT, ["T", "T"]))
        nodes.append(helper.make_node("Add", ["scores", "mask"], ["masked"]))
        logits = "masked"
    elif causal:
        # mask [T, T]: 0 on and below the diagonal, -1e9 above it.
        inits += [
            helper.make_tensor("one", TensorProto.INT64, [], [1]),
            helper.make_tensor("t_start", TensorProto.INT64, [1], [1]),
            helper.make_tensor("t_end", TensorProto.INT64, [1], [2]),
        ]
        nodes += [
            helper.make_node("Shape", ["query"], ["q_shape"]),
            helper.make_node("Slice", ["q_shape", "t_start", "t_end"], ["t"]),
            helper.make_node("Concat", ["t", "t"], ["tt"], axis=0),
            helper.make_node("ConstantOfShape", ["tt"], ["neg"],
                             value=helper.make_tensor("v", TensorProto.FLOAT, [1], [-1e9])),
            helper.make_node("Trilu", ["neg", "one"], ["mask"], upper=1),
            helper.make_node("Add", ["scores", "mask"], ["masked"]),
        ]
        logits = "masked"
    nodes += [
        helper.make_node("Softmax", [logits], ["probs"], axis=-1),
        helper.make_node("MatMul", ["probs", "value"], ["output"]),
    ]
    name = "matmul_causal_mask" if mask_input else "matmul_causal" if causal else "matmul"
    return helper.make_graph(nodes, name, inputs, [io("output")], initializer=inits)


HEADS = 8
D_MODEL = HEADS * D
WEIGHT_SEEDS = {"W_Q": 5, "W_K": 6, "W_V": 7, "W_O": 8}  # as in bench/wasm/bench.mjs


def layer_weight(seed):
    """[512, 512] float32 bytes: bench/wasm/bench.mjs's random(n, seed) / sqrt(512)."""
    s, out = seed, array.array("f", bytes(4 * D_MODEL * D_MODEL))
    f32 = array.array("f", [0.0])
    for i in range(D_MODEL * D_MODEL):
        s = (s * 1664525 + 1013904223) % 2**32
        f32[0] = s / 2**31 - 1  # rounded to float32, like a Float32Array store
        out[i] = f32[0] / math.sqrt(D_MODEL)
    return out.tobytes()


def tensor_io(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def heads_attention(q, k_t, v, out):
    """out = Softmax(q k_t / sqrt(64)) v on head-major [1, 8, rows, 64] / [1, 8, 64, keys] tensors.
    Returns the nodes and the initializers."""
    scale = helper.make_tensor("scale", TensorProto.FLOAT, [], [1.0 / math.sqrt(D)])
    nodes = [
        helper.make_node("MatMul", [q, k_t], ["qk"]),
        helper.make_node("Mul", ["qk", "scale"], ["scores"]),
        helper.make_node("Softmax", ["scores"], ["probs"], axis=-1),
        helper.make_node("MatMul", ["probs", v], [out]),
    ]
    return nodes, [scale]


def layer(fused):
    x = tensor_io("x", [1, "T", D_MODEL])
    out = tensor_io("output", [1, "T", D_MODEL])
    inits = [helper.make_tensor(w, TensorProto.FLOAT, [D_MODEL, D_MODEL], layer_weight(seed), raw=True)
             for w, seed in WEIGHT_SEEDS.items()]
    nodes = [helper.make_node("MatMul", ["x", w], [w.lower()[2:]]) for w in ("W_Q", "W_K", "W_V")]
    if fused:
        nodes.append(helper.make_node("MultiHeadAttention", ["q", "k", "v"], ["attn"], domain="com.microsoft",
                                      num_heads=HEADS))
    else:
        inits += [helper.make_tensor("split_shape", TensorProto.INT64, [4], [1, -1, HEADS, D]),
                  helper.make_tensor("merge_shape", TensorProto.INT64, [3], [1, -1, D_MODEL])]
        for name, perm in (("q", [0, 2, 1, 3]), ("k", [0, 2, 3, 1]), ("v", [0, 2, 1, 3])):
            nodes += [helper.make_node("Reshape", [name, "split_shape"], [f"{name}4"]),
                      helper.make_node("Transpose", [f"{name}4"], [f"{name}h"], perm=perm)]
        attn, scale = heads_attention("qh", "kh", "vh", "heads")
        nodes += attn
        inits += scale
        nodes += [helper.make_node("Transpose", ["heads"], ["merged4"], perm=[0, 2, 1, 3]),
                  helper.make_node("Reshape", ["merged4", "merge_shape"], ["attn"])]
    nodes.append(helper.make_node("MatMul", ["attn", "W_O"], ["output"]))
    name = "mha_layer" if fused else "matmul_layer"
    return helper.make_graph(nodes, name, [x], [out], initializer=inits)


def decode(fused):
    if fused:
        node = helper.make_node("MultiHeadAttention", ["query", "key", "value"], ["output"],
                                domain="com.microsoft", num_heads=HEADS)
        return helper.make_graph([node], "mha_decode",
                                 [tensor_io("query", [1, 1, D_MODEL]), tensor_io("key", [1, "N", D_MODEL]),
                                  tensor_io("value", [1, "N", D_MODEL])],
                                 [tensor_io("output", [1, 1, D_MODEL])])
    nodes, inits = heads_attention("query", "key_t", "value", "output")
    return helper.make_graph(nodes, "matmul_decode",
                             [tensor_io("query", [1, HEADS, 1, D]), tensor_io("key_t", [1, HEADS, D, "N"]),
                              tensor_io("value", [1, HEADS, "N", D])],
                             [tensor_io("output", [1, HEADS, 1, D])], initializer=inits)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "models")
    os.makedirs(out, exist_ok=True)
    for causal in (False, True):
        suffix = "_causal" if causal else ""
        save(mha(causal), os.path.join(out, f"mha{suffix}.onnx"), ms_domain=True)
        save(matmul(causal), os.path.join(out, f"matmul{suffix}.onnx"))
    save(matmul(True, mask_input=True), os.path.join(out, "matmul_causal_mask.onnx"))
    for fused in (True, False):
        prefix = "mha" if fused else "matmul"
        save(layer(fused), os.path.join(out, f"{prefix}_layer.onnx"), ms_domain=fused)
        save(decode(fused), os.path.join(out, f"{prefix}_decode.onnx"), ms_domain=fused)
    print(f"make_models: wrote {sorted(os.listdir(out))} to {out}")


if __name__ == "__main__":
    main()
