#!/usr/bin/env python3
"""Fits q(r), the cubic of ExpFlushed (src/core/ops-inl.h): e^r ~ 1 + r + r^2 q(r)
for |r| <= ln2 / 2 with the least maximum relative error, by Lawson's iteratively
reweighted least squares on Chebyshev nodes (pure Python, float64). Prints the
coefficients of q rounded to float32, low degree first, and the maximum relative
error of the polynomial evaluated in float32 as the kernel does (Horner, then
1 + (r + q r^2)); the kernel's own error adds the range reduction (about 2e-7 in
all, which tests/ops_test.cc checks through softmax on every target).

Usage: python3 scripts/fit_exp.py
"""
import math
import struct

HALF_LN2 = math.log(2) / 2
DEGREE = 3  # of q: e^r to degree 5
NODES = 2000


def f32(x):
    return struct.unpack("f", struct.pack("f", x))[0]


def solve(a, b):
    """Gaussian elimination with partial pivoting: a x = b."""
    n = len(b)
    m = [row[:] + [b[i]] for i, row in enumerate(a)]
    for c in range(n):
        p = max(range(c, n), key=lambda r: abs(m[r][c]))
        m[c], m[p] = m[p], m[c]
        for r in range(n):
            if r != c:
                f = m[r][c] / m[c][c]
                for k in range(c, n + 1):
                    m[r][k] -= f * m[c][k]
    return [m[i][n] / m[i][i] for i in range(n)]


def fit():
    xs = [HALF_LN2 * math.cos(math.pi * (i + 0.5) / NODES) for i in range(NODES)]
    w = [1.0] * NODES
    for _ in range(60):
        # Relative error of 1 + r + r^2 q(r): r^2 (q(r) - q*(r)) / e^r.
        a = [[0.0] * (DEGREE + 1) for _ in range(DEGREE + 1)]
        b = [0.0] * (DEGREE + 1)
        for x, wi in zip(xs, w):
            s = x * x / math.exp(x)
            basis = [s * x**k for k in range(DEGREE + 1)]
            target = (math.exp(x) - 1 - x) / math.exp(x)
            for i in range(DEGREE + 1):
                b[i] += wi * basis[i] * target
                for j in range(DEGREE + 1):
                    a[i][j] += wi * basis[i] * basis[j]
        c = solve(a, b)
        errs = [abs(1 + x + x * x * sum(c[k] * x**k for k in range(DEGREE + 1)) - math.exp(x)) / math.exp(x)
                for x in xs]
        worst = max(errs)
        w = [wi * (e / worst + 1e-3) for wi, e in zip(w, errs)]
        total = sum(w)
        w = [wi / total * NODES for wi in w]
    return c, worst


def main():
    c, worst = fit()
    q = [f32(x) for x in c]
    print("q coefficients (r^0 .. r^3):", ", ".join(f"{x:.8e}" for x in q))
    print(f"max relative error, float64 evaluation: {worst:.3g}")
    worst32 = 0.0
    for i in range(200001):
        r = f32(-HALF_LN2 + 2 * HALF_LN2 * i / 200000)
        p = q[DEGREE]
        for k in range(DEGREE - 1, -1, -1):
            p = f32(f32(p * r) + q[k])
        e = f32(f32(f32(p * f32(r * r)) + r) + 1.0)
        worst32 = max(worst32, abs(e - math.exp(r)) / math.exp(r))
    print(f"max relative error, float32 evaluation: {worst32:.3g}")


if __name__ == "__main__":
    main()
