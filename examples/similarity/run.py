#!/usr/bin/env python3
"""The seed's similarity (similarity_op under torch.compile, split into 1000-column slices)
beside hpcml's, on the same x = randn(samples, features): checked equal (both are exact) and
timed, medians of --rounds after a first call (which compiles the seed: reported apart).

hpcml's side, twice: hpcml.torch.similarity in mode "all" (bool) with host=True (its result
copied from the GPU into pinned host memory), inside torch.compile(fullgraph=True) as a user of
the seed would write it; and hpcml.similarity into a host tensor made once (page-locked on a
GPU), as a user who wants the result on the host would write it. The
seed's whole case (256 x 270725, a 73 GB result on the host, doubled by its last torch.cat) is
bench/compare_torch_real_case.py's, which times a band of rows and extrapolates.
"""

import argparse
import functools
import os
import statistics
import sys
import time
from typing import Callable

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hpcml  # noqa: E402
import hpcml.torch as ht  # noqa: E402
import seed  # noqa: E402


def median_seconds(call: Callable[[], object], rounds: int) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--samples", type=int, default=256, help="rows of x (the seed's 256)")
    parser.add_argument("--features", type=int, default=4000, help="columns of x (the seed's 270725: see above)")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if min(args.samples, args.features, args.rounds) < 1:
        parser.error("--samples, --features and --rounds: must be >= 1")
    if torch.device(args.device).type == "cuda" and hpcml.cuda_status()["status"] != "ok":
        print(f"run.py: no CUDA device: {hpcml.cuda_status()['message']}", file=sys.stderr)
        sys.exit(2)  # what the GPU suite's rehearsal counts as a skip

    torch.manual_seed(0)
    x = torch.randn((args.samples, args.features)).float().to(args.device)
    start = time.perf_counter()
    similarity = seed.make_similarity(args.device)
    try:
        reference = similarity(x)
        seed_note = "the seed as written"
    except RuntimeError as error:  # seed.py: CUDA graphs' outputs overwritten by the next replay
        if "overwritten by a subsequent run" not in str(error):
            raise
        print(f"run.py: the seed's program as written fails here (torch {torch.__version__}): "
              f"{str(error).splitlines()[0]}; running it with each similarity_op output cloned (seed.py)")
        similarity = functools.partial(similarity, clone_outputs=True)
        reference = similarity(x)
        seed_note = "the seed with similarity_op's outputs cloned"
    compile_seconds = time.perf_counter() - start

    @torch.compile(fullgraph=True)
    def with_hpcml(x: torch.Tensor) -> torch.Tensor:
        return ht.similarity(x, mode="all", dtype="bool", host=True)  # S on the host (pinned on a GPU)

    got = with_hpcml(x)
    assert torch.equal(got, reference), "hpcml's result differs from the seed's"
    # As a user who wants the result on the host writes it: one output made once, page-locked
    # where x is on a GPU (the result is copied into it at the host link's rate), and reused.
    n = args.features
    host_out = (torch.empty((n, n), dtype=torch.bool, pin_memory=True) if x.is_cuda
                else torch.from_numpy(np.empty((n, n), dtype=bool)))
    out_arg = host_out if x.is_cuda else host_out.numpy()  # host inputs write into NumPy arrays

    def into_host_out() -> torch.Tensor:
        hpcml.similarity(x, mode="all", dtype="bool", out=out_arg)
        return host_out

    assert torch.equal(into_host_out(), reference), "hpcml's result (into a host out) differs from the seed's"
    synchronize: Callable[[], object] = torch.cuda.synchronize if x.is_cuda else (lambda: None)
    seed_seconds = median_seconds(lambda: similarity(x), args.rounds)
    ours = median_seconds(lambda: (with_hpcml(x), synchronize()), args.rounds)
    into_out = median_seconds(into_host_out, args.rounds)
    print(f"x = randn({args.samples}, {args.features}) on {args.device}, mode all, threshold 1: the seed's result "
          f"and hpcml's are equal ({reference.numel():,} pairs); the seed's first call (torch.compile, mode "
          f"'reduce-overhead'): {compile_seconds:.1f} s")
    print(f"  {seed_note} (1000-column slices): {seed_seconds:.4f} s")
    print(f"  hpcml.torch.similarity(host=True), compiled: {ours:.4f} s ({seed_seconds / ours:.1f}x the seed)")
    print(f"  hpcml.similarity into a {'pinned ' if x.is_cuda else ''}host tensor made once: {into_out:.4f} s "
          f"({seed_seconds / into_out:.1f}x the seed)")


if __name__ == "__main__":
    main()
