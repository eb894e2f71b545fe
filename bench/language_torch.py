"""The language model's native benchmark (npm run bench -- --only language): attnkit's
GPT trained by its C++ API (bench/native/language.cc, attnkit_language_bench,
driven here as a child process) and the same model in PyTorch on the CPU, one
thread each, stepping in turns so that both meet the same load on a shared
machine.

The same model: attnkit's initial weights file (docs/model.md, version 2 or 3) is
read into a nanoGPT-style module (token and position embeddings; per block
pre-LayerNorm, causal multi-head attention without biases (one fused Q/K/V
projection, the mask and softmax of nanoGPT's path for torch < 2.0), residual,
LayerNorm, Linear -> GELU (tanh) -> Linear without biases, residual; final
LayerNorm; an untied unembedding). The same batches: attnkit's text dataset
draws each step's windows (seq_len + 1 characters) and sends them with its
loss; the validation windows come from a file it writes. The same optimiser:
torch.optim.AdamW with attnkit's betas, epsilon and weight decay on the
matrices only (W_Q, W_K, W_V, W_O, W_1, W_2, unembedding; not the embeddings
or LayerNorms), at the learning rate attnkit used for that step (its warm-up
and cosine decay), after torch.nn.utils.clip_grad_norm_ to attnkit's clip.

Per engine: training tokens/s (the median over steps after the first 20 of the
process's CPU time per step: each engine is its own process, one thread), the
validation loss on the fixed windows every EVAL_EVERY steps (not timed), steps
and CPU seconds of training to 2.2 and 2.0 nats/char, GFLOP/s and the share of
the FMA peak (measured by attnkit_language_bench in the same run), the first
losses against attnkit's (the same weights and batch must give the same loss:
the max relative difference over the first 20 steps) and the load average.
FLOPs of one training step (see flops_per_step): 6 per matrix parameter per
token (forward 2, backward 4: the input's and the weight's gradients) and the
causal attention's 7 T^2 d_k per head and sequence (forward 2 T^2 d_k, backward
5 T^2 d_k: FlashAttention-2's count halved for the causal mask); LayerNorm,
GELU, softmax, the loss and the optimiser are not counted.

Usage: /usr/bin/python3 bench/language_torch.py --attnkit build/bench/attnkit_language_bench
         --text FILE [--quick] [--preset NAME] > bench/results/language-native.json
"""

import json
import math
import os
import statistics
import struct
import subprocess
import sys
import tempfile
import time

import torch
import torch.nn.functional as F

SKIP = 20  # steps before the timed median (buffers sized, caches warm)
AGREE = 20  # the first losses compared with attnkit's
TARGETS = (2.2, 2.0)


def arg(name, default=None):
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else default


# --- attnkit's weights file (docs/model.md, versions 2 to 4) ---
CONFIG_WORDS = (
    "vocab_size",
    "max_seq_len",
    "d_model",
    "num_layers",
    "num_heads",
    "num_kv_heads",
    "d_k",
    "d_ff",
)


def read_weights(path):
    """The config and the tensors of a weights file, by name, in the file's order."""
    data = open(path, "rb").read()
    if data[:8] != b"ATKMODEL":
        raise ValueError(f"{path}: not an attnkit weights file")
    (version,) = struct.unpack_from("<I", data, 8)
    if version not in (2, 3, 4):
        raise ValueError(f"{path}: version {version} (expected 2 to 4)")
    words = struct.unpack_from("<9I", data, 12)
    config = dict(zip(CONFIG_WORDS, words[:8]))
    config["layer_norm"] = bool(words[8] & 1)
    config["scale_by_sqrt_dk"] = bool(words[8] & 2)
    if not config["layer_norm"] or config["d_ff"] == 0:
        raise ValueError(f"{path}: this benchmark's model is the GPT block (layer_norm, d_ff > 0)")
    # Version 4: bit 2 biases, bit 3 a tied unembedding, then the LayerNorm's epsilon.
    if words[8] & (4 | 8):
        raise ValueError(f"{path}: this benchmark's model has no biases and its own unembedding")
    at = 48
    config["layer_norm_epsilon"] = 1e-5
    if version >= 4:
        (config["layer_norm_epsilon"],) = struct.unpack_from("<f", data, at)
        at += 4
    (vocab_len,) = struct.unpack_from("<I", data, at)
    at += 4 + 4 * vocab_len
    if version >= 3:
        at += 4  # the trained steps
    (count,) = struct.unpack_from("<I", data, at)
    at += 4
    floats = torch.frombuffer(bytearray(data[at : at + 4 * count]), dtype=torch.float32)
    V, P, D = config["vocab_size"], config["max_seq_len"], config["d_model"]
    h, g, dk, dff = config["num_heads"], config["num_kv_heads"], config["d_k"], config["d_ff"]
    shapes = [("token_embedding", V, D), ("position_embedding", P, D)]
    for l in range(config["num_layers"]):
        p = f"layers.{l}."
        shapes += [
            (p + "ln_gain", 1, D),
            (p + "ln_bias", 1, D),
            (p + "W_Q", D, h * dk),
            (p + "W_K", D, g * dk),
            (p + "W_V", D, g * dk),
            (p + "W_O", h * dk, D),
            (p + "ln2_gain", 1, D),
            (p + "ln2_bias", 1, D),
            (p + "W_1", D, dff),
            (p + "W_2", dff, D),
        ]
    shapes += [("final_gain", 1, D), ("final_bias", 1, D), ("unembedding", D, V)]
    tensors, off = {}, 0
    for name, r, c in shapes:
        tensors[name] = floats[off : off + r * c].reshape(r, c).clone()
        off += r * c
    if off != count:
        raise ValueError(f"{path}: {count} floats, the config needs {off}")
    return config, tensors


def read_windows(path):
    """Validation windows [count, seq_len + 1] (int64) from attnkit's file: u32 count, u32 width, i32s."""
    data = open(path, "rb").read()
    count, width = struct.unpack_from("<2I", data, 0)
    w = torch.frombuffer(bytearray(data[8 : 8 + 4 * count * width]), dtype=torch.int32)
    return w.reshape(count, width).long()


# --- the model in PyTorch, nanoGPT's way ---
class Block(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        D, h, g, dk, dff = c["d_model"], c["num_heads"], c["num_kv_heads"], c["d_k"], c["d_ff"]
        self.h, self.g, self.dk = h, g, dk
        self.scale = 1 / math.sqrt(dk) if c["scale_by_sqrt_dk"] else 1.0
        self.ln_1 = torch.nn.LayerNorm(D, eps=c["layer_norm_epsilon"])
        self.c_attn = torch.nn.Linear(D, (h + 2 * g) * dk, bias=False)  # Q, K, V fused
        self.c_proj = torch.nn.Linear(h * dk, D, bias=False)
        self.ln_2 = torch.nn.LayerNorm(D, eps=c["layer_norm_epsilon"])
        self.c_fc = torch.nn.Linear(D, dff, bias=False)
        self.mlp_proj = torch.nn.Linear(dff, D, bias=False)

    def load(self, t, p):
        with torch.no_grad():
            self.ln_1.weight.copy_(t[p + "ln_gain"][0])
            self.ln_1.bias.copy_(t[p + "ln_bias"][0])
            # attnkit's x W ([in, out]) is nn.Linear's x W^T ([out, in]).
            self.c_attn.weight.copy_(torch.cat([t[p + "W_Q"], t[p + "W_K"], t[p + "W_V"]], 1).T)
            self.c_proj.weight.copy_(t[p + "W_O"].T)
            self.ln_2.weight.copy_(t[p + "ln2_gain"][0])
            self.ln_2.bias.copy_(t[p + "ln2_bias"][0])
            self.c_fc.weight.copy_(t[p + "W_1"].T)
            self.mlp_proj.weight.copy_(t[p + "W_2"].T)

    def forward(self, x, mask):
        B, T, D = x.shape
        h, g, dk = self.h, self.g, self.dk
        q, k, v = self.c_attn(self.ln_1(x)).split([h * dk, g * dk, g * dk], dim=2)
        q = q.view(B, T, h, dk).transpose(1, 2)  # [B, h, T, dk]
        k = k.view(B, T, g, dk).transpose(1, 2)
        v = v.view(B, T, g, dk).transpose(1, 2)
        if g != h:  # query head i reads K/V head i // (h / g)
            k = k.repeat_interleave(h // g, dim=1)
            v = v.repeat_interleave(h // g, dim=1)
        att = (q @ k.transpose(-2, -1)) * self.scale
        att = att.masked_fill(mask[:, :, :T, :T] == 0, float("-inf"))
        z = (F.softmax(att, dim=-1) @ v).transpose(1, 2).contiguous().view(B, T, h * dk)
        x = x + self.c_proj(z)
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class GPT(torch.nn.Module):
    def __init__(self, c, t):
        super().__init__()
        V, P, D = c["vocab_size"], c["max_seq_len"], c["d_model"]
        self.wte = torch.nn.Embedding(V, D)
        self.wpe = torch.nn.Embedding(P, D)
        self.blocks = torch.nn.ModuleList(Block(c) for _ in range(c["num_layers"]))
        self.ln_f = torch.nn.LayerNorm(D, eps=c["layer_norm_epsilon"])
        self.lm_head = torch.nn.Linear(D, V, bias=False)
        self.register_buffer("mask", torch.tril(torch.ones(P, P)).view(1, 1, P, P))
        with torch.no_grad():
            self.wte.weight.copy_(t["token_embedding"])
            self.wpe.weight.copy_(t["position_embedding"])
            for l, b in enumerate(self.blocks):
                b.load(t, f"layers.{l}.")
            self.ln_f.weight.copy_(t["final_gain"][0])
            self.ln_f.bias.copy_(t["final_bias"][0])
            self.lm_head.weight.copy_(t["unembedding"].T)

    def forward(self, idx, targets):
        B, T = idx.shape
        x = self.wte(idx) + self.wpe(torch.arange(T))
        for b in self.blocks:
            x = b(x, self.mask)
        logits = self.lm_head(self.ln_f(x))
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.reshape(-1))

    def optimizer(self, adam):
        """AdamW with weight decay on the matrices only (attnkit's rule)."""
        decay = [p for n, p in self.named_parameters() if n.endswith(".weight") and p.dim() == 2]
        decay = [p for p in decay if p is not self.wte.weight and p is not self.wpe.weight]
        ids = {id(p) for p in decay}
        rest = [p for p in self.parameters() if id(p) not in ids]
        return torch.optim.AdamW(
            [
                {"params": decay, "weight_decay": adam["weightDecay"]},
                {"params": rest, "weight_decay": 0.0},
            ],
            lr=adam["learningRate"],
            betas=(adam["beta1"], adam["beta2"]),
            eps=adam["epsilon"],
        )


def flops_per_step(c, batch, seq_len):
    """FLOPs of one training step (forward + backward) as the module docstring counts them."""
    D, L, h, g, dk, dff, V = (
        c[k] for k in ("d_model", "num_layers", "num_heads", "num_kv_heads", "d_k", "d_ff", "vocab_size")
    )
    matrix_params = L * (D * (h + 2 * g) * dk + h * dk * D + 2 * D * dff) + D * V
    tokens = batch * seq_len
    attention = L * batch * h * 7.0 * seq_len * seq_len * dk
    return 6.0 * matrix_params * tokens + attention


class Attnkit:
    """attnkit_language_bench --serve: one JSON line per command."""

    def __init__(self, binary, args):
        self.p = subprocess.Popen(
            [binary, "--serve", *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        self.hello = self.read()

    def read(self):
        line = self.p.stdout.readline()
        if not line:
            raise RuntimeError(f"attnkit_language_bench ended (exit {self.p.wait()})")
        r = json.loads(line)
        if "error" in r:
            raise RuntimeError(f"attnkit_language_bench: {r['error']}")
        return r

    def call(self, command):
        self.p.stdin.write(command + "\n")
        self.p.stdin.flush()
        return self.read()

    def close(self):
        self.p.stdin.close()
        self.p.wait()


def run(binary, text, preset, quick, out_dir):
    ak = Attnkit(binary, ["--text", text, "--preset", preset, "--out", out_dir] + (["--quick"] if quick else []))
    s = ak.hello  # the settings, the FMA peak and where the weights and windows are
    config, tensors = read_weights(s["weightsFile"])
    valid = read_windows(s["validFile"])
    torch.manual_seed(0)
    model = GPT(config, tensors)
    opt = model.optimizer(s["adam"])
    T = s["seqLen"]

    def torch_step(windows, lr):
        x, y = windows[:, :T], windows[:, 1:]
        for group in opt.param_groups:
            group["lr"] = lr
        loss = model(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if s["adam"]["clipNorm"] > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), s["adam"]["clipNorm"])
        opt.step()
        return loss.item()

    def torch_valid():
        with torch.no_grad():
            losses = [model(w[:, :T], w[:, 1:]).item() for w in valid.split(s["batch"])]
        sizes = [len(w) for w in valid.split(s["batch"])]
        return sum(l * n for l, n in zip(losses, sizes)) / sum(sizes)

    runs = {
        name: {"losses": [], "cpu": [], "wall": [], "valid": [], "to": {}, "done": False}
        for name in ("attnkit", "torch")
    }
    loads = [os.getloadavg()[0]]
    lrs = []
    max_steps, min_steps, every = s["maxSteps"], s["minSteps"], s["evalEvery"]
    for step in range(1, max_steps + 1):
        if all(r["done"] for r in runs.values()):
            break
        if step % 50 == 0:
            loads.append(os.getloadavg()[0])
        # attnkit first: it draws the batch.
        a = ak.call("step")
        windows = torch.tensor(a["windows"], dtype=torch.long).view(s["batch"], T + 1)
        lrs.append(a["lr"])
        ra, rt = runs["attnkit"], runs["torch"]
        if not ra["done"]:
            ra["losses"].append(a["loss"])
            ra["cpu"].append(a["cpuMs"])
            ra["wall"].append(a["wallMs"])
        if not rt["done"]:
            c0, t0 = time.process_time(), time.perf_counter()
            loss = torch_step(windows, a["lr"])
            rt["cpu"].append((time.process_time() - c0) * 1e3)
            rt["wall"].append((time.perf_counter() - t0) * 1e3)
            if not math.isfinite(loss):
                raise RuntimeError(f"torch: loss {loss} at step {step}")
            rt["losses"].append(loss)
        if step % every == 0 or step == max_steps:
            values = {"attnkit": ak.call("valid")["loss"] if not ra["done"] else None}
            values["torch"] = torch_valid() if not rt["done"] else None
            for name, r in runs.items():
                v = values[name]
                if v is None:
                    continue
                r["valid"].append([step, v])
                for target in TARGETS:
                    if target not in r["to"] and v <= target:
                        r["to"][target] = step
                if TARGETS[-1] in r["to"] and step >= min_steps:
                    r["done"] = True
            print(
                f"language step {step}: attnkit {values['attnkit']}, torch {values['torch']} (validation)",
                file=sys.stderr,
            )
        if step == AGREE:
            first = [abs(t - a) / a for a, t in zip(ra["losses"][:AGREE], rt["losses"][:AGREE])]
            if not first[0] < 1e-4:
                raise RuntimeError(f"first losses differ: attnkit {ra['losses'][0]}, torch {rt['losses'][0]}")
    generation = ak.call("generate 256")
    peak_end = ak.call("peak")["gflops"]
    ak.close()
    flops = flops_per_step(config, s["batch"], T)
    peak = max(s["fmaPeakGflops"], peak_end)
    tokens = s["batch"] * T
    engines = []
    for name, label in (("attnkit", "attnkit (native)"), ("torch", "PyTorch (CPU)")):
        r = runs[name]
        ms = statistics.median(r["cpu"][SKIP:]) if len(r["cpu"]) > SKIP else statistics.median(r["cpu"])
        gflops = flops / ms * 1e-6
        e = {
            "engine": label,
            "steps": len(r["losses"]),
            "cpuMsPerStep": ms,
            "wallMsPerStep": statistics.median(r["wall"][SKIP:] or r["wall"]),
            "tokensPerSecond": tokens / ms * 1e3,
            "gflops": gflops,
            "peakShare": gflops / peak,
            "firstLoss": r["losses"][0],
            "lastLoss": r["losses"][-1],
            "validation": r["valid"],
        }
        for target in TARGETS:
            at = r["to"].get(target)
            e[f"stepsTo{target}"] = at
            e[f"secondsTo{target}"] = sum(r["cpu"][:at]) / 1e3 if at else None
        engines.append(e)
    ra, rt = runs["attnkit"], runs["torch"]
    n = min(AGREE, len(ra["losses"]), len(rt["losses"]))
    agree = max(abs(rt["losses"][i] - ra["losses"][i]) / ra["losses"][i] for i in range(n))
    return {
        "quick": quick,
        "preset": preset,
        "settings": {k: s[k] for k in s if k not in ("weightsFile", "validFile")},
        "config": config,
        "flopsPerStep": flops,
        "fmaPeakGflops": peak,
        "fmaPeakStartEnd": [s["fmaPeakGflops"], peak_end],
        "first20LossMaxRelDiff": agree,
        "ratio": engines[1]["cpuMsPerStep"] / engines[0]["cpuMsPerStep"],
        "engines": engines,
        "generation": generation,
        "learningRates": lrs[:: max(1, len(lrs) // 50)],
        "loadAverage": loads,
        "torch": {
            "version": torch.__version__,
            "threads": torch.get_num_threads(),
            "cpu_capability": getattr(torch._C, "_get_cpu_capability", lambda: None)(),
        },
    }


def main():
    binary = arg("--attnkit", "build/bench/attnkit_language_bench")
    text = arg("--text")
    if not text:
        sys.exit("usage: language_torch.py --attnkit BINARY --text FILE [--quick] [--preset NAME]")
    quick = "--quick" in sys.argv
    presets = arg("--preset", "nanogpt").split(",")
    # One thread for every preset (PyTorch allows setting the interop threads once).
    torch.set_num_threads(1)
    torch.set_num_interop_threads(1)
    # The commit measured, at the start (dirty: with uncommitted changes; the
    # binary is the one scripts/bench.sh built from this tree).
    commit = subprocess.run(
        ["git", "describe", "--always", "--dirty"], capture_output=True, text=True
    ).stdout.strip()
    with tempfile.TemporaryDirectory() as out_dir:
        results = [run(binary, text, p, quick, out_dir) for p in presets]
    for r in results:
        e = r["engines"]
        print(
            f"language {r['preset']}: attnkit {e[0]['tokensPerSecond']:.0f} tok/s, torch "
            f"{e[1]['tokensPerSecond']:.0f} tok/s ({r['ratio']:.2f}x); first {AGREE} losses within "
            f"{r['first20LossMaxRelDiff']:.1e}",
            file=sys.stderr,
        )
    json.dump({"commit": commit, "runs": results}, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
