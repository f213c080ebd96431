#!/usr/bin/env python3
"""GPU comparison: the seed's regret matching in PyTorch (eager and torch.compile) against hpcml.

The seed program (simultaneous regret matching from uniform strategies; regret = cumulative
expert reward - cumulative expected reward; the average is the mean of the updated strategies),
written over a batch of games so that one code serves both workloads of issue 4:
  --actions 4096 --batch 1 --iterations 100      one large game
  --actions 3 --batch 100000 --iterations 1000   many small games
Checks that hpcml's seed variant gives the same average strategies (float32 tolerance) and prints
times and games x iterations / s side by side.
"""

import argparse
import time

import numpy as np

import hpcml


def seed_program(torch, A, iterations):
    """A: (B, n1, n2) float32 tensor. Returns the average strategies (B, n1), (B, n2)."""
    B, n1, n2 = A.shape
    p1 = torch.full((B, n1), 1.0 / n1, device=A.device)
    p2 = torch.full((B, n2), 1.0 / n2, device=A.device)
    expected1 = torch.zeros(B, 1, device=A.device)
    expected2 = torch.zeros(B, 1, device=A.device)
    experts1 = torch.zeros(B, n1, device=A.device)
    experts2 = torch.zeros(B, n2, device=A.device)
    sum1 = torch.zeros(B, n1, device=A.device)
    sum2 = torch.zeros(B, n2, device=A.device)

    def rm(regret, n):
        positive = regret.clamp(min=0)
        total = positive.sum(1, keepdim=True)
        return torch.where(total > 0, positive / total.clamp(min=1e-30), torch.full_like(positive, 1.0 / n))

    for _ in range(iterations):
        r1 = torch.bmm(A, p2.unsqueeze(2)).squeeze(2)
        r2 = -torch.bmm(p1.unsqueeze(1), A).squeeze(1)
        expected1 = expected1 + (p1 * r1).sum(1, keepdim=True)
        expected2 = expected2 + (p2 * r2).sum(1, keepdim=True)
        experts1 = experts1 + r1
        experts2 = experts2 + r2
        p1 = rm(experts1 - expected1, n1)
        p2 = rm(experts2 - expected2, n2)
        sum1 = sum1 + p1
        sum2 = sum2 + p2
    return sum1 / iterations, sum2 / iterations


def main():
    import torch

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--actions", type=int, default=4096)
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--iterations", type=int, default=100)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("compare_torch_regret.py: no CUDA device visible to PyTorch")

    rng = np.random.default_rng(0)
    A_host = rng.standard_normal((args.batch, args.actions, args.actions)).astype(np.float32)
    A = torch.from_numpy(A_host).cuda()
    compiled = torch.compile(seed_program, dynamic=False)  # torch is passed through unchanged

    def timed(fn):
        torch.cuda.synchronize()
        start = time.perf_counter()
        result = fn()
        torch.cuda.synchronize()
        return result, time.perf_counter() - start

    rows = []
    (x_eager, _), t_eager = timed(lambda: seed_program(torch, A, args.iterations))
    rows.append(("torch eager (seed)", t_eager))
    compiled(torch, A, 2)  # compile outside the timing
    (x_compiled, _), t_compiled = timed(lambda: compiled(torch, A, args.iterations))
    rows.append(("torch.compile (seed)", t_compiled))
    for method in ("fused", "naive"):
        if method == "naive" and args.batch > 100:
            continue  # one game at a time, a dozen launches per iteration: hours for big batches
        s, t = timed(lambda: hpcml.solve_matrix_games(A_host, variant="seed", iterations=args.iterations,
                                                      backend="cuda", method=method))
        np.testing.assert_allclose(s.row_strategy, x_eager.cpu().numpy(), atol=1e-3)
        rows.append((f"hpcml {method}", t))
    np.testing.assert_allclose(x_compiled.cpu().numpy(), x_eager.cpu().numpy(), atol=1e-4)

    work = args.batch * args.iterations
    print(f"{args.batch} game(s) of {args.actions} x {args.actions}, {args.iterations} iterations, seed variant, "
          f"{torch.cuda.get_device_name()}; strategies agree")
    print(f"{'':22s} {'seconds':>10s} {'game-iter/s':>12s} {'vs eager':>9s}")
    for name, seconds in rows:
        print(f"{name:22s} {seconds:10.4f} {work / seconds:12.4g} {t_eager / seconds:8.1f}x")


if __name__ == "__main__":
    main()
