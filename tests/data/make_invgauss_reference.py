#!/usr/bin/env python3
"""Writes invgauss_reference.csv: IG(mu, lam) pdf, logpdf, cdf, sf, logcdf, logsf at 50 digits
(mpmath), for lam / mu from 1e-3 to 1e7. Inputs are float32-representable, so one table serves
the float and the double functions. Columns: region (bulk: |standardised x| <= 3; tail: further
out), x, mu, lam, then the six values as decimal strings (they may lie outside double range)."""

import csv
import pathlib

import mpmath as mp
import numpy as np

mp.mp.dps = 50


def f32(v):
    return float(np.float32(v))


def values(x, mu, lam):
    x, mu, lam = mp.mpf(x), mp.mpf(mu), mp.mpf(lam)
    z1 = mp.sqrt(lam / x) * (x / mu - 1)
    z2 = mp.sqrt(lam / x) * (x / mu + 1)
    logpdf = mp.log(lam / (2 * mp.pi * x**3)) / 2 - z1**2 / 2
    # exp(2 lam / mu) Phi(-z2) = 0.5 erfc(z2 / sqrt 2) exp(2 lam / mu), exact at 50 digits.
    second = mp.erfc(z2 / mp.sqrt(2)) / 2 * mp.exp(2 * lam / mu)
    cdf = mp.ncdf(z1) + second
    sf = mp.ncdf(-z1) - second
    # Each log from its own side: log(1 - tiny) needs log1p, or 50 digits are not enough.
    logcdf = mp.log1p(-sf) if sf < 0.5 else mp.log(cdf)
    logsf = mp.log1p(-cdf) if cdf < 0.5 else mp.log(sf)
    return [logpdf, cdf, sf, logcdf, logsf]


def main():
    rows = []
    for ratio in [1e-3, 1e-2, 0.1, 1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7]:
        for mu in [1e-3, 1.0, 1e3]:
            mu32, lam32 = f32(mu), f32(mu * ratio)
            sd = (mu32**3 / lam32) ** 0.5
            points = [("bulk" if abs(y) <= 3 else "tail", mu32 + y * sd) for y in np.linspace(-5, 5, 21)]
            points += [("tail", mu32 * m) for m in [1e-4, 1e-2, 0.1, 0.5, 2, 10, 100, 1e4]]
            for region, x in points:
                x = f32(x)
                if x <= 0:
                    continue
                logpdf, cdf, sf, logcdf, logsf = values(x, mu32, lam32)
                rows.append([region, repr(x), repr(mu32), repr(lam32), mp.nstr(mp.exp(logpdf), 25), mp.nstr(logpdf, 25),
                             mp.nstr(cdf, 25), mp.nstr(sf, 25), mp.nstr(logcdf, 25), mp.nstr(logsf, 25)])
    out = pathlib.Path(__file__).with_name("invgauss_reference.csv")
    with out.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["region", "x", "mu", "lam", "pdf", "logpdf", "cdf", "sf", "logcdf", "logsf"])
        w.writerows(rows)
    print(f"wrote {len(rows)} rows to {out}")


if __name__ == "__main__":
    main()
