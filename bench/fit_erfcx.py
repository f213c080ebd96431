#!/usr/bin/env python3
"""The coefficients of the CPU's erfcx (kernels/invgauss/erfcx_cpu.hpp, kErfcxG), from mpmath.

erfcx(x) = exp(x^2) erfc(x) = g(t) / (1 + 2x) with t = (x - K) / (x + K), K = 3.5, which maps
x in [0, inf] onto t in [-1, 1]; g = erfcx(x) (1 + 2x) is smooth and flat there (from 1 to
2 / sqrt pi). g's Chebyshev series, from its values at the Chebyshev nodes at 50 digits, is cut
below --cut (the next terms are below it), then written in powers of t: those coefficients sum to
1.8 in magnitude, so evaluating them in double does not cancel. Prints the C++ table; --check
compares it with the one in erfcx_cpu.hpp (the test suite's check that the table is this script's).
"""

import argparse
import pathlib
import re
import sys

import mpmath as mp

K = mp.mpf("3.5")
HEADER = pathlib.Path(__file__).parents[1] / "kernels" / "invgauss" / "erfcx_cpu.hpp"


def g(t):
    if t == 1:
        return 2 / mp.sqrt(mp.pi)
    x = K * (1 + t) / (1 - t)
    return mp.erfc(x) * mp.exp(x * x) * (1 + 2 * x)


def coefficients(nodes=120, cut=2e-18):
    """Powers of t, from t^0, of g's Chebyshev series cut below `cut`."""
    mp.mp.dps = 50
    u = [mp.cos(mp.pi * (k + mp.mpf(1) / 2) / nodes) for k in range(nodes)]
    values = [g(v) for v in u]
    cheb = [2 * mp.fsum(values[k] * mp.cos(mp.pi * j * (k + mp.mpf(1) / 2) / nodes) for k in range(nodes)) / nodes
            for j in range(nodes)]
    cheb[0] /= 2
    n = max(j for j in range(nodes) if abs(cheb[j]) > cut) + 1
    basis = [[mp.mpf(1)], [mp.mpf(0), mp.mpf(1)]]  # T_j(t) in powers of t
    while len(basis) < n:
        previous, before = basis[-1], basis[-2]
        nxt = [mp.mpf(0)] + [2 * c for c in previous]
        for i, c in enumerate(before):
            nxt[i] -= c
        basis.append(nxt)
    powers = [mp.mpf(0)] * n
    for j in range(n):
        for i, c in enumerate(basis[j]):
            powers[i] += cheb[j] * c
    return powers


def table_in_header(path=HEADER):
    text = path.read_text()
    body = re.search(r"kErfcxG\[\d+\] = \{(.*?)\};", text, re.S).group(1)
    return [float(v) for v in re.findall(r"[-+0-9.e]+", body)]


def fit():
    """The table as doubles."""
    return [float(c) for c in coefficients()]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="exit 1 unless erfcx_cpu.hpp's table is this one")
    args = parser.parse_args()
    powers = fit()
    if args.check:
        header = table_in_header()
        if header != powers:
            sys.exit(f"fit_erfcx: erfcx_cpu.hpp's kErfcxG ({len(header)} values) differs from the fit ({len(powers)})")
        print(f"fit_erfcx: erfcx_cpu.hpp's kErfcxG is the fit ({len(powers)} coefficients)")
        return
    print(f"inline constexpr double kErfcxG[{len(powers)}] = {{")
    for i in range(0, len(powers), 2):
        print("    " + " ".join(f"{c!r}," for c in powers[i:i + 2]))
    print("};")


if __name__ == "__main__":
    main()
