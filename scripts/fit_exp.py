#!/usr/bin/env python3
"""Fits the polynomials of the core's exp (src/core/ops-inl.h) for the least maximum
relative error, by Lawson's iteratively reweighted least squares on Chebyshev nodes
(pure Python, float64):
  default     q(r), the cubic of ExpFlushed: e^r ~ 1 + r + r^2 q(r) for |r| <= ln2 / 2;
  --base 2    p(r), the quartic of Exp2Flushed: 2^r ~ 1 + r p(r) for |r| <= 1 / 2.
Prints the coefficients rounded to float32, low degree first, and the maximum
relative error of the polynomial evaluated in float32 as the kernel does (Horner,
then 1 + (r + q r^2), or 1 + r p); the kernel's own error adds the range reduction
(about 2e-7 in all for ExpFlushed, which tests/ops_test.cc checks through softmax
on every target; tests/flash_test.cc checks ExpViaExp2 through the fused kernel).

Usage: python3 scripts/fit_exp.py [--base 2]
"""
import math
import struct
import sys

BASE2 = sys.argv[1:] == ["--base", "2"]
# ExpFlushed: e^r ~ 1 + r + r^2 q(r), q a cubic (degree 5 in all), |r| <= ln2 / 2.
# Exp2Flushed: 2^r ~ 1 + r p(r), p a quartic (degree 5 in all), |r| <= 1 / 2.
HALF = 0.5 if BASE2 else math.log(2) / 2
DEGREE = 4 if BASE2 else 3
NODES = 2000


def target(x):
    return 2.0**x if BASE2 else math.exp(x)


def approx(c, x):
    """The polynomial with coefficients c (low degree first), in float64."""
    poly = sum(c[k] * x**k for k in range(DEGREE + 1))
    return 1 + x * poly if BASE2 else 1 + x + x * x * poly


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
    xs = [HALF * math.cos(math.pi * (i + 0.5) / NODES) for i in range(NODES)]
    w = [1.0] * NODES
    for _ in range(60):
        # Relative error: (approx - f) / f, linear in the coefficients: the basis
        # r^(k + 1) / f (base 2) or r^(k + 2) / f, the target (f - 1) / f or
        # (f - 1 - r) / f.
        a = [[0.0] * (DEGREE + 1) for _ in range(DEGREE + 1)]
        b = [0.0] * (DEGREE + 1)
        for x, wi in zip(xs, w):
            f = target(x)
            lead = 1 if BASE2 else 2
            basis = [x ** (k + lead) / f for k in range(DEGREE + 1)]
            goal = (f - 1) / f if BASE2 else (f - 1 - x) / f
            for i in range(DEGREE + 1):
                b[i] += wi * basis[i] * goal
                for j in range(DEGREE + 1):
                    a[i][j] += wi * basis[i] * basis[j]
        c = solve(a, b)
        errs = [abs(approx(c, x) - target(x)) / target(x) for x in xs]
        worst = max(errs)
        w = [wi * (e / worst + 1e-3) for wi, e in zip(w, errs)]
        total = sum(w)
        w = [wi / total * NODES for wi in w]
    return c, worst


def main():
    c, worst = fit()
    q = [f32(x) for x in c]
    name = "p" if BASE2 else "q"
    print(f"{name} coefficients (r^0 .. r^{DEGREE}):", ", ".join(f"{x:.8e}" for x in q))
    print(f"max relative error, float64 evaluation: {worst:.3g}")
    worst32 = 0.0
    for i in range(200001):
        r = f32(-HALF + 2 * HALF * i / 200000)
        p = q[DEGREE]
        for k in range(DEGREE - 1, -1, -1):
            p = f32(f32(p * r) + q[k])
        if BASE2:
            e = f32(f32(p * r) + 1.0)
        else:
            e = f32(f32(f32(p * f32(r * r)) + r) + 1.0)
        worst32 = max(worst32, abs(e - target(r)) / target(r))
    print(f"max relative error, float32 evaluation: {worst32:.3g}")


if __name__ == "__main__":
    main()
