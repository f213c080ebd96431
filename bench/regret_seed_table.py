#!/usr/bin/env python3
"""The seed's claim, checked: on Rock-Paper-Scissors-with-Crash after 500 iterations the seed
commented "eps < 0.03". Prints, for the seed and each variant, its eps bound
(2 max(max R1, max R2) / T), whether that bounds the gap, and the exact Nash gap."""

import hpcml
from hpcml.figures import REGRET_LINES, RPS_CRASH


def main(iterations=500):
    print(f"| RPS with Crash, {iterations} iterations | eps = 2 max R / T | eps < 0.03 | eps bounds the gap | exact gap |")
    print("|---|---|---|---|---|")
    lines = REGRET_LINES + [("RM, simultaneous, uniform", dict(variant="rm", alternating=False, averaging="uniform")),
                            ("seed, sampled (seed 0)", dict(variant="seed", sampled=True))]
    for label, options in lines:
        s = hpcml.solve_matrix_game(RPS_CRASH, iterations=iterations, backend="cpu", **options)
        print(f"| {label} | {s.eps_bound:.4f} | {'yes' if s.eps_bound < 0.03 else 'no'} | "
              f"{'yes' if s.eps_bound_valid else 'no'} | {s.gap:.2e} |")


if __name__ == "__main__":
    main()
