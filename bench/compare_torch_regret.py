#!/usr/bin/env python3
"""The seed's regret matching in PyTorch (eager and torch.compile) against hpcml, side by side.

seed_program is the seed's getEquilibrium (../shared/seeds, "Approximate Nash Equilibrium by
Regret Matching") op for op, with a leading batch axis so that one code serves both workloads:
  --actions 4096 --batch 1 --iterations 100      one large game
  --actions 3 --batch 100000 --iterations 1000   many small games
(.mm becomes torch.bmm, sums and maxima run over the action axis). Checks that hpcml's seed
variant gives the same average strategies (to float32 rounding), then times each contender in
--rounds alternating rounds and prints the medians, the speed-ups over eager and over
torch.compile, and, for games over 64 actions, hpcml fused's fraction of its floor (one pass over
A per iteration at the device's peak bandwidth, or the CPU's stream bandwidth). --device cpu
compares on the CPU.
"""

import peers  # first: the peers at their full speed

import argparse  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

import hpcml  # noqa: E402
from cuda_check import require_cuda  # noqa: E402


def seed_program(torch, PAYOFF, N_ITER: int):
    """PAYOFF: (B, n1, n2) float32 tensor. Returns the average strategies (B, n1), (B, n2) and eps (B,)."""
    B, n1, n2 = PAYOFF.shape
    device = PAYOFF.device

    def getStrategy(cfr):
        weights = torch.clip(cfr, 0, torch.inf)
        weights = weights / torch.sum(weights, dim=1, keepdim=True)
        N_ACTIONS = weights.shape[1]
        weights = torch.nan_to_num(weights, nan=1 / N_ACTIONS)
        return weights

    cumCFR1 = torch.zeros(B, n1, device=device)
    cumCFR2 = torch.zeros(B, n2, device=device)
    cumStrategy1 = torch.zeros(B, n1, device=device)
    cumStrategy2 = torch.zeros(B, n2, device=device)
    strategy1 = torch.ones(B, n1, device=device) / n1
    strategy2 = torch.ones(B, n2, device=device) / n2
    for _ in range(N_ITER):
        PAYOFF_avg = strategy1.view(B, 1, -1).bmm(PAYOFF).bmm(strategy2.view(B, -1, 1))
        cfr1 = (PAYOFF.bmm(strategy2.view(B, -1, 1)) - PAYOFF_avg).squeeze(2)
        cfr2 = (strategy1.view(B, 1, -1).bmm(PAYOFF) - PAYOFF_avg).squeeze(1) * (-1)
        strategy1 = getStrategy(cumCFR1)
        strategy2 = getStrategy(cumCFR2)
        cumCFR1 += cfr1
        cumCFR2 += cfr2
        cumStrategy1 += strategy1
        cumStrategy2 += strategy2
    avgStrategy1 = cumStrategy1 / cumStrategy1.sum(dim=1, keepdim=True)
    avgStrategy2 = cumStrategy2 / cumStrategy2.sum(dim=1, keepdim=True)
    eps = 2 * torch.maximum(cumCFR1.max(dim=1).values, cumCFR2.max(dim=1).values) / N_ITER
    return avgStrategy1, avgStrategy2, eps


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--actions", type=int, default=4096)
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--iterations", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3, help="alternating timing rounds (medians are printed)")
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    parser.add_argument("--compile-mode", default="default", help="torch.compile mode (the seed used max-autotune)")
    args = parser.parse_args()
    for name in ("actions", "batch", "iterations", "rounds"):
        if getattr(args, name) < 1:
            parser.error(f"--{name}: must be >= 1")
    if args.device == "cuda":
        require_cuda("compare_torch_regret.py (--device cpu compares on the CPU)")
    import torch

    rng = np.random.default_rng(0)
    A_host = rng.standard_normal((args.batch, args.actions, args.actions)).astype(np.float32)
    A = torch.from_numpy(A_host).to(args.device)
    compiled = torch.compile(seed_program, dynamic=False, mode=args.compile_mode)  # torch passes through unchanged

    def synchronize():
        if args.device == "cuda":
            torch.cuda.synchronize()

    # Each program is given the payoffs where it computes: torch's tensor on the device (hpcml solves
    # a CUDA array where it is), NumPy's array on the CPU; a host array on the GPU would add the
    # payoffs' upload to hpcml's time alone (1 GiB at 16384^2).
    payoffs = A if args.device == "cuda" else A_host

    def hpcml_call(method):
        return lambda: hpcml.solve_matrix_games(payoffs, variant="seed", iterations=args.iterations,
                                                backend=args.device, method=method)

    contenders = [("torch eager (seed)", lambda: seed_program(torch, A, args.iterations)),
                  ("torch.compile (seed)", lambda: compiled(torch, A, args.iterations)),
                  ("hpcml fused", hpcml_call("fused"))]
    if args.batch <= 100:  # naive solves one game at a time: hours for big batches
        contenders.append(("hpcml naive", hpcml_call("naive")))

    # Warm up (torch.compile compiles here), and check that everybody computes the seed.
    x_eager = seed_program(torch, A, args.iterations)[0].cpu().numpy()
    compiled(torch, A, args.iterations)
    for name, call in contenders[1:]:
        result = call()
        x = result[0] if isinstance(result, tuple) else result.row_strategy
        x = x.cpu().numpy() if isinstance(x, torch.Tensor) else x
        np.testing.assert_allclose(x, x_eager, atol=1e-4, err_msg=name)

    times = {name: [] for name, _ in contenders}
    for _ in range(args.rounds):
        for name, call in contenders:
            synchronize()
            start = time.perf_counter()
            call()
            synchronize()
            times[name].append(time.perf_counter() - start)

    work = args.batch * args.iterations
    device = torch.cuda.get_device_name() if args.device == "cuda" else "CPU"
    print(peers.gpu_header() if args.device == "cuda" else peers.header())
    # The floor of games over 64 actions: one pass over A per iteration at the memory bandwidth;
    # smaller games are a chain of dependent steps, bound by latency, with no such floor.
    large = args.actions > 64
    bandwidth = (peers.gpu_bandwidth() if args.device == "cuda" else peers.stream_bandwidth()) if large else 0.0
    floor = 4.0 * args.batch * args.actions ** 2 * args.iterations / bandwidth if large else 0.0
    print(f"{args.batch} game(s) of {args.actions} x {args.actions}, {args.iterations} iterations, seed variant, "
          f"{device}, median of {args.rounds} alternating rounds; strategies agree; "
          + (f"floor {floor * 1e3:.2f} ms (one pass over A per iteration at {bandwidth / 1e9:.0f} GB/s)" if large
             else "no floor (small games are latency-bound)"))
    eager = statistics.median(times["torch eager (seed)"])
    compiled_seconds = statistics.median(times["torch.compile (seed)"])
    print(f"{'':22s} {'seconds':>10s} {'game-iter/s':>12s} {'vs eager':>9s} {'vs compile':>11s} {'floor frac':>11s}")
    for name, _ in contenders:
        seconds = statistics.median(times[name])
        fraction = f"{floor / seconds:11.2f}" if large and name == "hpcml fused" else f"{'':11s}"
        print(f"{name:22s} {seconds:10.4f} {work / seconds:12.4g} {eager / seconds:8.1f}x "
              f"{compiled_seconds / seconds:10.1f}x {fraction}")


if __name__ == "__main__":
    main()
