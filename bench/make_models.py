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

Written with Debian's python3-onnx (apt-get install python3-onnx); nothing is downloaded.
Usage: python3 bench/make_models.py [OUT_DIR]   (default: bench/models next to this file)
"""
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


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "models")
    os.makedirs(out, exist_ok=True)
    for causal in (False, True):
        suffix = "_causal" if causal else ""
        save(mha(causal), os.path.join(out, f"mha{suffix}.onnx"), ms_domain=True)
        save(matmul(causal), os.path.join(out, f"matmul{suffix}.onnx"))
    save(matmul(True, mask_input=True), os.path.join(out, "matmul_causal_mask.onnx"))
    print(f"make_models: wrote {sorted(os.listdir(out))} to {out}")


if __name__ == "__main__":
    main()
