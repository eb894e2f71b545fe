"""GPT-2 in PyTorch on the CPU, the peer of attnkit's GPT-2 benchmark (npm run bench --
--only gpt2, driven by bench/wasm/gpt2.mjs), and the source of onnxruntime-web's model.

The model: Hugging Face's GPT2LMHeadModel written out (Debian's python3-torch has no
transformers), read from the benchmark's model.safetensors (the safetensors format read
here by hand: 8 bytes of header length, the JSON header, the data; the same file attnkit
opens): token and position embeddings; per block ln_1, c_attn (Conv1D: x W + b, W stored
[in, out]), causal attention over the KV cache (scores / sqrt(d_k), the mask as HF's
causal buffer), c_proj, ln_2, c_fc, GELU (tanh), c_proj; ln_f; the logits of the last
position through the tied embedding. One call runs new tokens [T] after a cache `past`
[layers, 2, heads, T_past, d_k] (T_past = 0: a prompt's prefill) and returns the last
position's logits [1, V] and the grown cache (HF's generation, batch 1).

  --export-onnx FILE   writes that model as ONNX (opset 17: LayerNormalization; inputs
                       input_ids int64 [T], past; outputs logits, present; T and T_past
                       dynamic) for onnxruntime-web
  --serve              answers one command per line on stdin with one JSON line:
      prefill REPS IDS       REPS prefills of the prompt IDS (comma-separated): each one's
                             CPU ms (this process, every thread) and wall ms
      generate N REPS IDS    REPS times: the prefill of IDS (untimed), then N greedy
                             tokens through the cache (timed: CPU and wall ms of the N
                             steps); the last tokens
      check N FILE IDS       the prefill's logits and those after N greedy tokens written
                             to FILE as float32 [2, V]; the tokens
      quit
  --threads N          torch's intra-op threads (1: with OMP_NUM_THREADS=1 as well, set by
                       the caller; 0: every core)

Usage: /usr/bin/python3 bench/gpt2_torch.py --checkpoint DIR (--export-onnx FILE | --serve
         [--threads N])
"""

import json
import math
import os
import struct
import sys
import time

import torch
import torch.nn.functional as F


def arg(name, default=None):
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else default


def read_safetensors(path):
    """{name: float32 tensor} of a safetensors file of F32 tensors (the benchmark writes F32)."""
    data = bytearray(open(path, "rb").read())
    (n,) = struct.unpack_from("<Q", data, 0)
    header = json.loads(data[8 : 8 + n].decode("utf-8"))
    start = 8 + n
    tensors = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        if t["dtype"] != "F32":
            raise ValueError(f"{path}: tensor {name} is {t['dtype']}, this reader takes F32")
        begin, end = t["data_offsets"]
        flat = torch.frombuffer(data, dtype=torch.float32, offset=start + begin, count=(end - begin) // 4)
        tensors[name.removeprefix("transformer.")] = flat.reshape(t["shape"])
    return tensors


class GPT2(torch.nn.Module):
    def __init__(self, config, t):
        super().__init__()
        E, L, H = config["n_embd"], config["n_layer"], config["n_head"]
        P = config.get("n_positions") or config["n_ctx"]
        self.L, self.H, self.dk = L, H, E // H
        self.eps = config.get("layer_norm_epsilon", 1e-5)
        self.scale = 1 / math.sqrt(self.dk)
        par = lambda name: torch.nn.Parameter(t[name], requires_grad=False)
        self.wte, self.wpe = par("wte.weight"), par("wpe.weight")
        names = ("ln_1.weight", "ln_1.bias", "attn.c_attn.weight", "attn.c_attn.bias",
                 "attn.c_proj.weight", "attn.c_proj.bias", "ln_2.weight", "ln_2.bias",
                 "mlp.c_fc.weight", "mlp.c_fc.bias", "mlp.c_proj.weight", "mlp.c_proj.bias")
        self.blocks = torch.nn.ModuleList()
        for l in range(L):
            b = torch.nn.Module()
            for name in names:
                b.register_parameter(name.replace(".", "_"), par(f"h.{l}.{name}"))
            self.blocks.append(b)
        self.ln_f_weight, self.ln_f_bias = par("ln_f.weight"), par("ln_f.bias")
        # HF's causal buffer: query row i (absolute) sees keys 0 .. i.
        self.register_buffer("mask", torch.tril(torch.ones(P, P, dtype=torch.bool)), persistent=False)

    def forward(self, input_ids, past):
        """input_ids [T] int64, past [L, 2, H, T_past, d_k] -> logits [1, V], present."""
        T, Tp = input_ids.shape[0], past.shape[3]
        H, dk, E = self.H, self.dk, self.H * self.dk
        x = self.wte[input_ids] + self.wpe[Tp : Tp + T]  # [T, E]
        mask = self.mask[Tp : Tp + T, : Tp + T]  # [T, T_past + T]
        presents = []
        for l, b in enumerate(self.blocks):
            a = F.layer_norm(x, (E,), b.ln_1_weight, b.ln_1_bias, self.eps)
            q, k, v = torch.addmm(b.attn_c_attn_bias, a, b.attn_c_attn_weight).split(E, dim=1)
            q = q.view(T, H, dk).transpose(0, 1)  # [H, T, dk]
            k = torch.cat([past[l, 0], k.view(T, H, dk).transpose(0, 1)], dim=1)  # [H, Tp + T, dk]
            v = torch.cat([past[l, 1], v.view(T, H, dk).transpose(0, 1)], dim=1)
            presents.append(torch.stack([k, v]))
            s = torch.matmul(q, k.transpose(1, 2)) * self.scale  # [H, T, Tp + T]
            s = s.masked_fill(~mask, float("-inf"))
            z = torch.matmul(F.softmax(s, dim=-1), v).transpose(0, 1).reshape(T, E)
            x = x + torch.addmm(b.attn_c_proj_bias, z, b.attn_c_proj_weight)
            m = F.layer_norm(x, (E,), b.ln_2_weight, b.ln_2_bias, self.eps)
            u = F.gelu(torch.addmm(b.mlp_c_fc_bias, m, b.mlp_c_fc_weight), approximate="tanh")
            x = x + torch.addmm(b.mlp_c_proj_bias, u, b.mlp_c_proj_weight)
        last = F.layer_norm(x[T - 1 :], (E,), self.ln_f_weight, self.ln_f_bias, self.eps)
        return F.linear(last, self.wte), torch.stack(presents)

    def empty_past(self):
        return torch.zeros(self.L, 2, self.H, 0, self.dk)


def load(directory):
    config = json.load(open(os.path.join(directory, "config.json")))
    return GPT2(config, read_safetensors(os.path.join(directory, "model.safetensors"))).eval()


def export_onnx(model, out):
    ids = torch.arange(3, dtype=torch.int64)
    past = torch.zeros(model.L, 2, model.H, 2, model.dk)
    torch.onnx.export(
        model,
        (ids, past),
        out,
        input_names=["input_ids", "past"],
        output_names=["logits", "present"],
        dynamic_axes={"input_ids": {0: "T"}, "past": {3: "T_past"}, "present": {3: "T_total"}},
        opset_version=17,
        do_constant_folding=True,
    )


def ids_of(text):
    return torch.tensor([int(x) for x in text.split(",")], dtype=torch.int64)


def serve(model):
    torch.set_grad_enabled(False)
    clock = lambda: (time.process_time() * 1e3, time.perf_counter() * 1e3)

    def generate(ids, n, logits_out=None):
        """The prefill of ids, then n greedy tokens: (cpu ms, wall ms) of the n steps, tokens."""
        logits, past = model(ids, model.empty_past())
        first = logits
        tokens = []
        c0, w0 = clock()
        for _ in range(n):
            token = int(torch.argmax(logits[0]))
            tokens.append(token)
            logits, past = model(torch.tensor([token]), past)
        c1, w1 = clock()
        if logits_out is not None:
            torch.cat([first, logits]).numpy().tofile(logits_out)
        return c1 - c0, w1 - w0, tokens

    print(json.dumps({
        "engine": "PyTorch (CPU)",
        "version": torch.__version__,
        "threads": torch.get_num_threads(),
        "cpuCapability": getattr(torch._C, "_get_cpu_capability", lambda: None)(),
    }), flush=True)
    for line in sys.stdin:
        words = line.split()
        if not words or words[0] == "quit":
            break
        if words[0] == "prefill":
            reps, ids = int(words[1]), ids_of(words[2])
            cpu, wall = [], []
            for _ in range(reps):
                c0, w0 = clock()
                model(ids, model.empty_past())
                c1, w1 = clock()
                cpu.append(c1 - c0)
                wall.append(w1 - w0)
            reply = {"cpuMs": cpu, "wallMs": wall}
        elif words[0] == "generate":
            n, reps, ids = int(words[1]), int(words[2]), ids_of(words[3])
            runs = [generate(ids, n) for _ in range(reps)]
            reply = {"cpuMs": [r[0] for r in runs], "wallMs": [r[1] for r in runs], "tokens": runs[-1][2]}
        elif words[0] == "check":
            n, out, ids = int(words[1]), words[2], ids_of(words[3])
            reply = {"tokens": generate(ids, n, out)[2]}
        else:
            reply = {"error": f"unknown command {words[0]}"}
        print(json.dumps(reply), flush=True)


def main():
    directory = arg("--checkpoint")
    if not directory:
        sys.exit("usage: gpt2_torch.py --checkpoint DIR (--export-onnx FILE | --serve [--threads N])")
    threads = int(arg("--threads", "1"))
    torch.set_num_threads(threads if threads > 0 else os.cpu_count())
    torch.set_num_interop_threads(1)
    model = load(directory)
    if "--export-onnx" in sys.argv:
        export_onnx(model, arg("--export-onnx"))
    elif "--serve" in sys.argv:
        serve(model)


if __name__ == "__main__":
    main()
