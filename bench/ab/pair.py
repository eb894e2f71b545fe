#!/usr/bin/env python3
"""Paired A/B rounds of two programs that print "name value" lines (lower is
better): runs A and B alternately (the order reversed every other round), then
prints per name the medians of A and B and the median of the per-round ratios
A / B (the speed of B relative to A: above 1, B is faster) with quartiles.

Usage: pair.py ROUNDS 'A command' 'B command'
"""
import statistics
import subprocess
import sys


def run(cmd):
    out = subprocess.run(cmd, shell=True, check=True, capture_output=True, text=True).stdout
    result = {}
    for line in out.splitlines():
        name, value = line.rsplit(" ", 1)
        result[name] = float(value)
    return result


def quartiles(xs):
    xs = sorted(xs)
    q = lambda f: xs[min(len(xs) - 1, int(f * len(xs)))]
    return q(0.25), statistics.median(xs), q(0.75)


def main():
    rounds, a_cmd, b_cmd = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    a_runs, b_runs = [], []
    for r in range(rounds):
        if r % 2 == 0:
            a_runs.append(run(a_cmd))
            b_runs.append(run(b_cmd))
        else:
            b_runs.append(run(b_cmd))
            a_runs.append(run(a_cmd))
    worst = None
    for name in a_runs[0]:
        a = [x[name] for x in a_runs]
        b = [x[name] for x in b_runs]
        lo, mid, hi = quartiles([x / y for x, y in zip(a, b)])
        worst = mid if worst is None else min(worst, mid)
        print(f"{name:45s} A {statistics.median(a):11.3f}  B {statistics.median(b):11.3f}"
              f"  B/A speed {mid:.3f} [{lo:.3f}, {hi:.3f}]")
    print(f"lowest paired median: {worst:.3f}")


if __name__ == "__main__":
    main()
