"""The seed's inverse-Gaussian figure with hpcml.invgauss: the same panels from the same
parameters (SciPy's invgauss(mu) is IG with mean mu and shape lambda = 1, so lambda / mu = 1 / mu).

Left: hpcml.invgauss.standardized_pdf, the density of (X - mu) / sqrt(mu^3 / lambda), for the
seed's five mu on its grid. Right: hpcml.invgauss.distance_to_normal, fused (no P x G matrix), on
the seed's grid of 1000 points. The seed's metric, mean |f - phi| * 20, is the L1 distance, twice
the total variation hpcml returns, and its Riemann sum is 1000 / 999 times the trapezoid rule
(the end points' densities are below 1e-20 here), so the seed's number is 2 * 999/1000 * tv.
"""

from typing import Literal

import numpy as np
import matplotlib.pyplot as plt
from matplotlib.figure import Figure
from numpy.typing import NDArray

from hpcml import invgauss as ig

MUS = np.linspace(0.5, 0.00001, 100)  # the seed's right panel
LEFT_MUS = np.array([0.2, 0.1, 0.05, 0.01, 0.0001])  # the seed's left panel
Floats = NDArray[np.float64]  # the arrays of panels (float64)


def panels(backend: Literal["auto", "cpu", "cuda"] = "auto") -> tuple[Floats, Floats, tuple[Floats, Floats]]:
    """(left: 5 x 10000 densities, right: (lambda / mu, the seed's metric) for the 100 mu)."""
    xs = np.linspace(-5, 5, 10000)
    left = ig.standardized_pdf(xs[None, :], LEFT_MUS[:, None], 1.0, backend=backend)
    tv = ig.distance_to_normal(MUS, 1.0, metric="tv", grid=(-10, 10, 1000), backend=backend)
    return xs, left, (1.0 / MUS, 2.0 * 0.999 * tv)


def figure(backend: Literal["auto", "cpu", "cuda"] = "auto") -> tuple[Figure, list[tuple[np.float64, np.float64]]]:
    xs, left, (k, metric) = panels(backend)
    fig, axs = plt.subplots(1, 2, figsize=(12, 4))
    for mu, density in zip(LEFT_MUS, left):
        axs[0].plot(xs, density, label=rf"$\lambda/\mu$={1 / mu:.2f}")
    axs[0].legend(title="standardised distribution")
    axs[0].set_xlabel("$x$")
    axs[0].set_ylabel("pdf")
    axs[1].plot(k, metric)
    axs[1].set_xscale("log")
    axs[1].set_xlabel(r"$\lambda / \mu$")
    axs[1].set_yscale("log")
    axs[1].set_ylabel("total-variation to normal")
    fig.tight_layout()
    return fig, list(zip(k, metric))
