#!/usr/bin/env python3
"""The seed's real similarity case in PyTorch, timed on a band of rows and extrapolated, beside
hpcml on the same band.

The seed ("Case Study 2" of the energy report's trace script) computes, for
x = randn(256, 270725) on the GPU, S = all_s(|x[s, i] - x[s, j]| < 1) with a torch.compile'd
(mode="reduce-overhead") similarity_op over 1000-column slices: each row slice against every
column slice, the slices of a row band concatenated and sent to the host, and at the end every
band concatenated into one bool matrix. That matrix is 270725^2 bytes = 73.3 GB on the host, and
the final torch.cat makes a second copy (147 GB at its peak): the whole program does not fit a
GPU machine of 128 GB. Every band of 1000 rows does the same work (271 calls of similarity_op
and one copy to the host), so this script runs the seed's code unchanged on the first --bands
row slices, times it after a warm-up band (compilation, CUDA-graph capture), and extrapolates
linearly to all row slices; the final torch.cat is timed on the bands computed and scaled the
same way (a host memory copy). Both are reported as extrapolations.

hpcml computes the same band from the same x on the GPU into a host bool array (and a bitmask),
each made once and page-locked, as a user who wants the result on the host would write it (the
seed's result also ends on the host); the results are checked equal to the seed's. The whole
case end to end in hpcml (to a file, bitmask and pair list) is hpcml-similarity's run in the GPU
suite.
"""

import peers  # first: the peers at their full speed

import argparse  # noqa: E402
import functools  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

import hpcml  # noqa: E402
from cuda_check import require_cuda  # noqa: E402


def seed_program(torch, x, MATRIX_BATCH, bands):
    """The seed's program, op for op; the only change: `for x_i in x_slices[:bands]` (a band of rows).

    similarity(x, clone_outputs=True) clones each similarity_op output, the one op PyTorch asks
    for where the seed as written fails (examples/similarity/seed.py says why)."""

    @torch.compile(mode='reduce-overhead', backend='inductor')
    def similarity_op(x, y):
        xy = x[:, :, None] - y[:, None, :]
        xy = xy.abs() < 1
        xy = xy.all(axis=0)
        return xy

    _ = similarity_op(torch.randn(1, MATRIX_BATCH), torch.randn(1, MATRIX_BATCH))

    def similarity(x, clone_outputs=False):
        x_slices = torch.split(x, MATRIX_BATCH, -1)
        result = []
        for x_i in x_slices[:bands]:
            result_i = []
            for x_j in x_slices:
                result_i.append(similarity_op(x_i, x_j).clone() if clone_outputs else similarity_op(x_i, x_j))
            result_i = torch.cat(result_i, -1)
            result_i = result_i.to(device='cpu', non_blocking=True)
            result.append(result_i)
        torch.cuda.synchronize()  # the seed synchronises after its final cat; timed apart below
        return result

    return similarity


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, default=256)
    parser.add_argument("--dim", type=int, default=270725, help="the seed's 270725 features")
    parser.add_argument("--bands", type=int, default=4, help="row slices of 1000 timed (after one warm-up band)")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds; medians are printed")
    args = parser.parse_args()
    for name in ("samples", "dim", "bands", "rounds"):
        if getattr(args, name) < 1:
            parser.error(f"--{name}: must be >= 1")
    batch = 1000
    slices = -(-args.dim // batch)
    if args.bands > slices:
        parser.error(f"--bands: at most {slices} (the row slices of {args.dim} features)")
    require_cuda("compare_torch_real_case.py")
    import torch

    torch.manual_seed(0)
    x = torch.randn((args.samples, args.dim)).float().cuda('cuda:0')
    rows = min(args.bands * batch, args.dim)
    band = x[:, :rows].contiguous()
    outs = {"bool": torch.empty((rows, args.dim), dtype=torch.bool, pin_memory=True),
            "bitmask": torch.empty((rows, -(-args.dim // 8)), dtype=torch.uint8, pin_memory=True)}

    seed = seed_program(torch, x, batch, args.bands)
    try:
        seed(x)  # warm-up: compiles similarity_op for both slice widths and captures its CUDA graphs
    except RuntimeError as error:
        if "overwritten by a subsequent run" not in str(error):
            raise
        print(f"the seed's program as written fails here (torch {torch.__version__}): {str(error).splitlines()[0]}; "
              "timing it with each similarity_op output cloned")
        seed = functools.partial(seed, clone_outputs=True)
        seed(x)
    reference = torch.cat(seed(x), -2).numpy()

    def run_seed():
        return seed(x)

    def run_hpcml(dtype):
        return lambda: hpcml.similarity(band, x, mode="all", dtype=dtype, tile=batch, out=outs[dtype])

    got = run_hpcml("bool")().numpy()
    np.testing.assert_array_equal(got, reference, err_msg="hpcml differs from the seed")
    bits = run_hpcml("bitmask")().numpy()
    np.testing.assert_array_equal(bits, np.packbits(reference, axis=1, bitorder="little"), err_msg="bitmask")

    contenders = [("seed (torch.compile)", run_seed), ("hpcml bool", run_hpcml("bool")),
                  ("hpcml bitmask", run_hpcml("bitmask"))]
    times = {name: [] for name, _ in contenders}
    cat_times = []
    for _ in range(args.rounds):
        for name, call in contenders:
            torch.cuda.synchronize()
            start = time.perf_counter()
            result = call()
            times[name].append(time.perf_counter() - start)
            if name.startswith("seed"):
                start = time.perf_counter()
                torch.cat(result, -2)
                cat_times.append(time.perf_counter() - start)
            del result

    scale = args.dim / rows
    seed_band = statistics.median(times["seed (torch.compile)"])
    # Mode all stops comparing a tile once every pair in it has failed, so the full count of
    # pair-samples is a bound the early exit can beat: the fraction is of the dense floor.
    floor = peers.gpu_similarity_floor(args.samples * rows * args.dim)
    print(peers.gpu_header())
    print(f"x = randn({args.samples}, {args.dim}) on {torch.cuda.get_device_name()}, mode all, threshold 1; "
          f"a band of {rows} rows x {args.dim} columns ({args.bands} of {slices} row slices), results equal; "
          f"median of {args.rounds} alternating rounds, whole-case times extrapolated x{scale:.1f}; "
          f"the band's dense floor {floor:.3f} s (3 instructions per pair-sample; mode all may stop early)")
    print(f"{'':22s} {'band s':>9s} {'whole case s (extrapolated)':>28s} {'vs seed':>8s} {'dense floor frac':>17s}")
    for name, _ in contenders:
        band = statistics.median(times[name])
        fraction = f"{floor / band:17.2f}" if name.startswith("hpcml") else f"{'':17s}"
        print(f"{name:22s} {band:9.3f} {band * scale:28.1f} {seed_band / band:7.1f}x {fraction}")
    cat = statistics.median(cat_times)
    print(f"{'seed final torch.cat':22s} {cat:9.3f} {cat * scale:28.1f}   (a host copy of the result: "
          f"{args.dim ** 2 / 1e9:.1f} GB, twice that at its peak)")


if __name__ == "__main__":
    main()
