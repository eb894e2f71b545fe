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
GFLOP/s: forward 4 T^2 d + backward 10 T^2 d per head (FlashAttention-2's
convention, halved when causal), as bench/native/bench.cc counts them.

Usage: python3 bench/torch_bench.py [--quick] > bench/results/torch.json
"""

import json
import math
import statistics
import sys
import time

import torch

D = 64


def timed(step, reps, batch_seconds=0.1):
    """Median CPU seconds per call of step() over `reps` rounds (after a warm-up),
    the rounds, and the median wall-clock seconds per call."""
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
    return statistics.median(rounds), rounds, statistics.median(wall)


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
    torch.set_num_threads(1)
    sizes = [128, 512] if quick else [128, 512, 2048, 8192]
    reps = 3 if quick else 5
    results = []
    for causal in (False, True):
        for T in sizes:
            flops = 14.0 * T * T * D * (0.5 if causal else 1.0)
            for name, step in head_steps(T, causal).items():
                seconds, rounds, wall = timed(step, reps)
                results.append(
                    {
                        "engine": name,
                        "T": T,
                        "causal": causal,
                        "ms": seconds * 1e3,
                        "wallMs": wall * 1e3,
                        "gflops": flops / seconds * 1e-9,
                        "msRounds": [round(r * 1e3, 4) for r in rounds],
                    }
                )
                print(f"torch {name} T={T} causal={causal}: {seconds * 1e3:.2f} ms", file=sys.stderr)
    T, dm = 512, 512
    seconds, rounds, wall = timed(layer_step(T, dm), reps)
    # forward: 4 projections + attention; backward: twice the projections' flops + 10 T^2 dm
    flops = 3 * 4 * 2.0 * T * dm * dm + 14.0 * T * T * dm
    results.append(
        {
            "engine": "PyTorch nn.MultiheadAttention",
            "shape": "layer T=512",
            "ms": seconds * 1e3,
            "wallMs": wall * 1e3,
            "gflops": flops / seconds * 1e-9,
            "msRounds": [round(r * 1e3, 4) for r in rounds],
        }
    )
    print(f"torch layer: {seconds * 1e3:.2f} ms", file=sys.stderr)
    info = {
        "version": torch.__version__,
        "threads": torch.get_num_threads(),
        "sdpa": hasattr(torch.nn.functional, "scaled_dot_product_attention"),
        "cpu_capability": getattr(torch._C, "_get_cpu_capability", lambda: None)(),
        "config": torch.__config__.show(),
    }
    json.dump({"quick": quick, "reps": reps, "torch": info, "results": results}, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
