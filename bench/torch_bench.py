"""PyTorch on the CPU, the native peer of attnkit's backward (npm run bench).

One thread (torch.set_num_threads(1)), fp32, the shapes of bench/native/bench.cc:
  head   one head, d = 64, T = 128..8192, causal and not: forward + backward
         (loss gradient dO given) through autograd of the plain formulation
         softmax(Q K^T * scale + mask) V (the mask: -inf above the diagonal,
         made once per shape), and through
         torch.nn.functional.scaled_dot_product_attention where this torch has it;
  layer  torch.nn.MultiheadAttention(512, 8 heads, no bias), B = 1, T = 512,
         self-attention with its projections, forward + backward (dX and
         the weights' gradients).
Timing as Google Benchmark's repetitions: after a warm-up, `reps` rounds of
calls that last ~0.1 s each; the median of the rounds' CPU time per call (the
process's, one thread: on a shared machine the wall time also counts the time
other processes had the core), and the wall time beside it.
Paired with attnkit (--attnkit PATH, the attnkit_bench binary): after each
round of PyTorch, one run of attnkit's benchmark of the same shape
(BM_AttnkitFwdBwd, BM_AttnkitMultiHeadTrain; --benchmark_min_time=0.1, its
CPU time per call) on the same core, so that both engines meet the host in
the same state: a shared host's speed drifts by more than the engines differ
over a run. Each result then holds attnkit's rounds and `pairedRatio`, the
median over rounds of PyTorch's time over attnkit's.
GFLOP/s: forward 4 T^2 d + backward 10 T^2 d per head (FlashAttention-2's
convention, halved when causal), as bench/native/bench.cc counts them.

Usage: python3 bench/torch_bench.py [--quick] [--attnkit PATH] > bench/results/torch.json
"""

import json
import math
import statistics
import subprocess
import sys
import time

import torch

D = 64


def attnkit_round(binary, name):
    """CPU seconds per call of attnkit's benchmark `name` (exact), one run."""
    out = subprocess.run(
        [
            binary,
            f"--benchmark_filter=^{name}$",
            "--benchmark_min_time=0.1",
            "--benchmark_format=json",
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    (b,) = [b for b in json.loads(out)["benchmarks"] if b["run_name"] == name]
    if b.get("error_occurred"):
        raise RuntimeError(f"{name}: {b.get('error_message')}")
    return b["cpu_time"] * {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[b["time_unit"]]


def timed(step, reps, batch_seconds=0.1, after_round=None):
    """Median CPU seconds per call of step() over `reps` rounds (after a warm-up),
    the rounds, and the median wall-clock seconds per call; after_round() runs
    after each round, outside the timing."""
    t0 = time.perf_counter()
    n = 0
    while n < 2 or time.perf_counter() - t0 < 0.2:
        step()
        n += 1
    per_call = (time.perf_counter() - t0) / n
    calls = max(1, round(batch_seconds / per_call))
    rounds, wall = [], []
    for _ in range(reps):
        t0, c0 = time.perf_counter(), time.process_time()
        for _ in range(calls):
            step()
        rounds.append((time.process_time() - c0) / calls)
        wall.append((time.perf_counter() - t0) / calls)
        if after_round:
            after_round()
    return statistics.median(rounds), rounds, statistics.median(wall)


def paired(result, step, reps, binary, name):
    """Times step() as timed(), with a round of attnkit's `name` after each of
    its rounds when `binary` is given; fills `result` (ms, rounds, pairing)."""
    theirs = []
    after = (lambda: theirs.append(attnkit_round(binary, name))) if binary else None
    seconds, rounds, wall = timed(step, reps, after_round=after)
    result.update(
        {
            "ms": seconds * 1e3,
            "wallMs": wall * 1e3,
            "msRounds": [round(r * 1e3, 4) for r in rounds],
        }
    )
    if theirs:
        ratios = [p / a for p, a in zip(rounds, theirs)]
        result.update(
            {
                "attnkitBenchmark": name,
                "attnkitMs": statistics.median(theirs) * 1e3,
                "attnkitMsRounds": [round(a * 1e3, 4) for a in theirs],
                "pairedRatio": statistics.median(ratios),
            }
        )
    return seconds


def head_steps(T, causal):
    """The engines' fwd+bwd steps for one head: {name: step}."""
    g = torch.Generator().manual_seed(T)
    q, k, v, d_out = (torch.rand(T, D, generator=g) * 2 - 1 for _ in range(4))
    q, k, v = (x.requires_grad_() for x in (q, k, v))
    scale = 1 / math.sqrt(D)
    mask = torch.full((T, T), float("-inf")).triu(1) if causal else None

    def plain():
        s = (q @ k.transpose(0, 1)) * scale
        if mask is not None:
            s = s + mask
        out = torch.softmax(s, dim=-1) @ v
        q.grad = k.grad = v.grad = None
        out.backward(d_out)

    steps = {"PyTorch autograd (plain)": plain}
    sdpa = getattr(torch.nn.functional, "scaled_dot_product_attention", None)
    if sdpa is not None:

        def fused():
            out = sdpa(q[None], k[None], v[None], is_causal=causal)[0]
            q.grad = k.grad = v.grad = None
            out.backward(d_out)

        steps["PyTorch scaled_dot_product_attention"] = fused
    return steps


def layer_step(T=512, d_model=512, heads=8):
    torch.manual_seed(0)
    mha = torch.nn.MultiheadAttention(d_model, heads, bias=False, batch_first=True)
    x = (torch.rand(1, T, d_model) * 2 - 1).requires_grad_()
    d_out = torch.rand(1, T, d_model) * 2 - 1

    def step():
        out, _ = mha(x, x, x, need_weights=False)
        mha.zero_grad(set_to_none=True)
        x.grad = None
        out.backward(d_out)

    return step


def main():
    quick = "--quick" in sys.argv
    binary = sys.argv[sys.argv.index("--attnkit") + 1] if "--attnkit" in sys.argv else None
    torch.set_num_threads(1)
    sizes = [128, 512] if quick else [128, 512, 2048, 8192]
    reps = 3 if quick else 5
    results = []
    for causal in (False, True):
        for T in sizes:
            flops = 14.0 * T * T * D * (0.5 if causal else 1.0)
            for name, step in head_steps(T, causal).items():
                r = {"engine": name, "T": T, "causal": causal}
                bm = f"BM_AttnkitFwdBwd/T:{T}/causal:{int(causal)}/threads:1"
                seconds = paired(r, step, reps, binary, bm)
                r["gflops"] = flops / seconds * 1e-9
                results.append(r)
                print(f"torch {name} T={T} causal={causal}: {seconds * 1e3:.2f} ms", file=sys.stderr)
    T, dm = 512, 512
    r = {"engine": "PyTorch nn.MultiheadAttention", "shape": "layer T=512"}
    seconds = paired(r, layer_step(T, dm), reps, binary, "BM_AttnkitMultiHeadTrain")
    # forward: 4 projections + attention; backward: twice the projections' flops + 10 T^2 dm
    flops = 3 * 4 * 2.0 * T * dm * dm + 14.0 * T * T * dm
    r["gflops"] = flops / seconds * 1e-9
    results.append(r)
    print(f"torch layer: {seconds * 1e3:.2f} ms", file=sys.stderr)
    info = {
        "version": torch.__version__,
        "threads": torch.get_num_threads(),
        "sdpa": hasattr(torch.nn.functional, "scaled_dot_product_attention"),
        "cpu_capability": getattr(torch._C, "_get_cpu_capability", lambda: None)(),
        "config": torch.__config__.show(),
    }
    json.dump(
        {"quick": quick, "reps": reps, "paired": bool(binary), "torch": info, "results": results},
        sys.stdout,
        indent=1,
    )
    print()


if __name__ == "__main__":
    main()
