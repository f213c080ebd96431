"""Figures hpcml's README shows, drawn from hpcml's own results (matplotlib, PNG).

    python -m hpcml.figures regret docs/regret_convergence.png
    python -m hpcml.figures invgauss docs/invgauss_normal.png
    python -m hpcml.figures energy RESULTS.json OUT.png   # a bench_* --benchmark_out=RESULTS.json
"""

from __future__ import annotations

import argparse
import sys
import textwrap

import numpy as np

from . import _optional, invgauss
from ._regret import solve_matrix_game

RPS_CRASH = np.array([[0, -1, 2], [1, 0, -1], [-2, 1, 0]], dtype=np.float32)

# (label, options): the seed and each modern variant in its usual setting.
REGRET_LINES = [
    ("seed (simultaneous RM, one iteration behind, uniform)", dict(variant="seed")),
    ("RM, alternating, uniform", dict(variant="rm", averaging="uniform")),
    ("RM+, alternating, linear", dict(variant="rm+", averaging="linear")),
    ("DCFR(1.5, 0, 2), alternating", dict(variant="dcfr", averaging="quadratic")),
    ("PRM+, simultaneous, quadratic", dict(variant="prm+", alternating=False)),
    ("PRM+, alternating, quadratic (default)", dict(variant="prm+")),
]


def regret_convergence(path, iterations=10000, random_size=1000, backend="auto"):
    """Exact Nash gap against iterations, log-log, one line per variant, for RPS-with-Crash
    (left) and a random normal random_size x random_size game (right)."""
    plt = _optional.pyplot("hpcml.figures")

    games = [("RPS with Crash", RPS_CRASH, iterations),
             (f"random normal {random_size} x {random_size}",
              np.random.default_rng(0).standard_normal((random_size, random_size)).astype(np.float32),
              min(iterations, 2000))]
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.8))
    for ax, (title, A, T) in zip(axes, games):
        every = max(1, T // 100)
        for label, options in REGRET_LINES:
            s = solve_matrix_game(A, iterations=T, record_every=every, backend=backend, **options)
            ax.loglog(s.curve[:, 0], np.maximum(s.curve[:, 1], 1e-16), label=label)
        ax.set_title(title)
        ax.set_xlabel("iterations")
        ax.set_ylabel("exact Nash gap of the average profile")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].axhline(0.03, color="gray", linestyle=":", linewidth=1)
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def invgauss_normal(path, backend="auto"):
    """The seed's figure: left, standardised IG(mu, 1) densities for mu in {0.2, 0.1, 0.05,
    0.01, 0.0001} against N(0, 1); right, the total variation distance between the standardised
    IG and N(0, 1) against lambda / mu on log-log axes (2 to 1e5, 100 values), with a reference
    line of slope -1/2."""
    plt = _optional.pyplot("hpcml.figures")

    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.8))
    y = np.linspace(-4, 6, 1001)
    for mu in [0.2, 0.1, 0.05, 0.01, 0.0001]:
        left.plot(y, invgauss.standardized_pdf(y, mu, 1.0, backend=backend), label=f"mu = {mu:g} (lambda/mu = {1 / mu:g})")
    left.plot(y, np.exp(-y**2 / 2) / np.sqrt(2 * np.pi), "k--", label="N(0, 1)")
    left.set_xlabel("standardised value y")
    left.set_ylabel("density")
    left.set_title("standardised IG(mu, 1)")
    left.legend(fontsize=8)

    ratio = np.logspace(np.log10(2), 5, 100)
    tv = invgauss.distance_to_normal(1.0 / ratio, np.ones_like(ratio), metric="tv", grid=(-12, 12, 4001), backend=backend)
    right.loglog(ratio, tv, label="TV(standardised IG, N(0, 1))")
    right.loglog(ratio, tv[-1] * np.sqrt(ratio[-1] / ratio), "k:", label="slope -1/2")
    right.set_xlabel("lambda / mu")
    right.set_ylabel("total variation")
    right.set_title("distance to the normal")
    right.grid(True, which="both", alpha=0.3)
    right.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


_UNITS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}


def fused_naive_pairs(results: dict) -> list[dict]:
    """The fused and naive runs of each benchmark in a Google Benchmark JSON result (a bench_*
    program's --benchmark_out), paired by name (family/method/backend/parameters): one dict per
    pair with seconds, peak bytes (device or host, the larger) and energy per iteration (J, None
    where not measured) of each. Medians where there are repetitions."""
    rows = [b for b in results.get("benchmarks", [])
            if b.get("run_type") != "aggregate" or b.get("aggregate_name") == "median"]
    measured = {}
    for b in rows:
        parts = b.get("run_name", b["name"]).split("/")
        if len(parts) < 3 or parts[1] not in ("fused", "naive") or b.get("error_occurred"):
            continue
        measured[(parts[0], "/".join(parts[2:]), parts[1])] = {
            "seconds": b["real_time"] * _UNITS[b.get("time_unit", "ns")],
            "peak_bytes": max(b.get("peak_device_bytes", 0.0), b.get("peak_host_bytes", 0.0)),
            "energy_j": b.get("energy_per_iteration_J"),
        }
    pairs = []
    for (family, rest, method), fused in measured.items():
        naive = measured.get((family, rest, "naive"))
        if method == "fused" and naive:
            pairs.append({"benchmark": f"{family}/{rest.removesuffix('/manual_time')}", "fused": fused, "naive": naive})
    return pairs


def energy(results_path, path):
    """Time, peak memory and energy per iteration of fused against naive, one group of bars per
    benchmark of a bench_* JSON result; where energy was not measured, the panel says why (the
    result's hpcml_energy context). Returns the pairs drawn (fused_naive_pairs)."""
    import json

    plt = _optional.pyplot("hpcml.figures")

    with open(results_path) as f:
        results = json.load(f)
    pairs = fused_naive_pairs(results)
    if not pairs:
        raise ValueError(f"results_path: {results_path} has no fused and naive runs of the same benchmark")
    context = results.get("context", {})
    fig, axes = plt.subplots(1, 3, figsize=(16, 2.6 + 0.7 * len(pairs)))
    y = np.arange(len(pairs))
    for axis, (key, label) in zip(axes, [("seconds", "time per call [s]"), ("peak_bytes", "peak memory [bytes]"),
                                         ("energy_j", "energy per call [J]")]):
        for offset, method, colour in ((-0.2, "fused", "tab:blue"), (0.2, "naive", "tab:orange")):
            values = [p[method][key] for p in pairs]
            heights = [v if v else 0.0 for v in values]
            axis.barh(y + offset, heights, height=0.4, color=colour, label=method)
            for row, value in enumerate(values):
                if value:
                    axis.text(value, row + offset, f" {value:.3g}", va="center", fontsize=7)
        if key == "energy_j" and not any(p["fused"][key] and p["naive"][key] for p in pairs):
            why = textwrap.fill("energy " + context.get("hpcml_energy", "not measured"), 48)
            axis.text(0.5, 0.5, why, transform=axis.transAxes, ha="center", va="center", fontsize=8)
            axis.set_xticks([])
        else:
            axis.set_xscale("log")
        axis.set_title(label)
        axis.set_yticks(y, [p["benchmark"] for p in pairs] if axis is axes[0] else [""] * len(pairs), fontsize=7)
    axes[0].legend(fontsize=8)
    fig.suptitle(f"fused against naive: {context.get('hpcml_device', '')} ({context.get('hpcml_commit', '')})",
                 fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return pairs


def main():
    parser = argparse.ArgumentParser(description="Draw hpcml's figures.")
    sub = parser.add_subparsers(dest="figure", required=True)
    regret = sub.add_parser("regret", help="regret-matching convergence (gap vs iterations)")
    regret.add_argument("output", help="PNG path")
    regret.add_argument("--iterations", type=int, default=10000)
    regret.add_argument("--size", type=int, default=1000, help="random game size")
    regret.add_argument("--backend", default="auto")
    normal = sub.add_parser("invgauss", help="the seed's inverse-Gaussian figure (densities, TV vs lambda/mu)")
    normal.add_argument("output", help="PNG path")
    normal.add_argument("--backend", default="auto")
    power = sub.add_parser("energy", help="time, memory and energy of fused against naive, from a bench_* JSON result")
    power.add_argument("results", help="a bench_* --benchmark_out=FILE (JSON)")
    power.add_argument("output", help="PNG path")
    args = parser.parse_args()
    try:
        draw(args)
    except ModuleNotFoundError as e:  # an optional part: one line naming its extra
        sys.exit(f"python -m hpcml.figures: {e}")
    print(f"wrote {args.output}")


def draw(args: argparse.Namespace) -> None:
    if args.figure == "regret":
        regret_convergence(args.output, args.iterations, args.size, args.backend)
    elif args.figure == "energy":
        energy(args.results, args.output)
    else:
        invgauss_normal(args.output, args.backend)


if __name__ == "__main__":
    main()
