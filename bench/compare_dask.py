#!/usr/bin/env python3
"""CPU comparison: one similarity job (x = randn(samples, dim) float32, y = x, mode all, bitmask)
run four ways on one machine, checked to agree, then timed in alternating rounds (medians):

- one call: ``hpcml.similarity(x, mode="all", dtype="bitmask")`` with the machine's threads;
- ``hpcml.dask.similarity(...).compute()`` on a local cluster of WORKERS processes of one thread
  each, for each tile size (the cluster is started once; x goes in as a NumPy array each time),
  and ``hpcml.dask.to_zarr`` of it into a new store (the result never comes back to the client);
- ``hpcml-similarity x.npy --output S.npy --mode all --dtype bitmask --tile T`` under
  ``mpirun -np WORKERS`` (one thread per rank), and in one process with every thread: both read
  x from a file and write S to one, so they pay a process start and the file's writes that the
  in-memory runs do not (the output on /dev/shm where it exists).

The overhead per tile is (dask's median - the one call's) / the tiles dask computes (with y = x,
those on and above the diagonal; the mirrored ones are transposed copies).
"""

import os

import peers  # first: NumPy at its full speed

# Threads that spin after a parallel region would slow down whichever call runs next.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse  # noqa: E402
import pathlib  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402

import numpy as np  # noqa: E402

import hpcml  # noqa: E402
import hpcml.dask  # noqa: E402
import dask  # noqa: E402,F401  (its version goes into the header)
import distributed  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, default=256)
    parser.add_argument("--dim", type=int, nargs="+", default=[20000, 60000])
    parser.add_argument("--tiles", type=int, nargs="+", default=[2048, 4096, 8192, 16384])
    parser.add_argument("--workers", type=int, default=2, help="dask worker processes and MPI ranks (default: 2)")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    print(peers.header())
    program = shutil.which("hpcml-similarity")
    mpirun = shutil.which("mpirun")
    scratch = pathlib.Path(tempfile.mkdtemp(dir="/dev/shm" if os.path.isdir("/dev/shm") else None))
    one_thread = {"OMP_NUM_THREADS": "1", "OMP_WAIT_POLICY": "PASSIVE"}
    with distributed.LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                                  dashboard_address=None, env=one_thread) as cluster, \
            distributed.Client(cluster) as client:
        print(f"dask {dask.__version__}, distributed {distributed.__version__}: {args.workers} worker processes of "
              f"one thread; mpirun: {mpirun or 'not found'}; outputs in {scratch}")
        for dim in args.dim:
            x = np.random.default_rng(0).standard_normal((args.samples, dim)).astype(np.float32)
            np.save(scratch / "x.npy", x)
            runs = {"one call": lambda: hpcml.similarity(x, mode="all", dtype="bitmask", backend="cpu")}
            computed = {}
            for tile in args.tiles:
                if tile >= dim:
                    continue
                k = hpcml.dask.similarity(x, mode="all", dtype="bitmask", chunks=tile).numblocks[0]
                computed[tile] = k * (k + 1) // 2  # on and above the diagonal
                runs[f"dask, tile {tile}"] = lambda t=tile: hpcml.dask.similarity(
                    x, mode="all", dtype="bitmask", backend="cpu", chunks=t).compute()
                runs[f"dask to_zarr, tile {tile}"] = lambda t=tile: (
                    shutil.rmtree(scratch / "S.zarr", ignore_errors=True),
                    hpcml.dask.to_zarr(hpcml.dask.similarity(x, mode="all", dtype="bitmask", backend="cpu", chunks=t),
                                       str(scratch / "S.zarr")))
                cli = [program, str(scratch / "x.npy"), "--output", str(scratch / f"S{tile}.npy"), "--mode", "all",
                       "--dtype", "bitmask", "--backend", "cpu", "--tile", str(tile), "--quiet", "--restart"]
                if mpirun:
                    runs[f"mpirun -np {args.workers}, tile {tile}"] = lambda c=cli: subprocess.run(
                        [mpirun, "--allow-run-as-root", "--oversubscribe", "-np", str(args.workers),
                         "-x", "OMP_NUM_THREADS=1"] + c, check=True)
                runs[f"hpcml-similarity, tile {tile}"] = lambda c=cli: subprocess.run(c, check=True)
            results = {name: run() for name, run in runs.items()}  # warm-up, and the check
            expected = results["one call"]
            for name, result in results.items():
                if isinstance(result, np.ndarray):
                    assert np.array_equal(result, expected), name
            for tile in computed:
                assert np.array_equal(np.load(scratch / f"S{tile}.npy"), expected), f"the CLI's output, tile {tile}"
            medians = peers.medians(peers.alternate(runs, args.rounds))
            base = medians["one call"]
            print(f"x = randn({args.samples}, {dim}), y = x, mode all, bitmask ({expected.nbytes / 1e6:.0f} MB): "
                  f"median of {args.rounds} alternating rounds")
            for name, median in medians.items():
                line = f"  {name:<32} {median:8.3f} s   {median / base:5.2f}x the one call"
                if name.startswith("dask"):
                    tile = int(name.rsplit(" ", 1)[1])
                    line += (f"   {computed[tile]} tiles computed: "
                             f"{(median - base) / computed[tile] * 1e3:+.1f} ms per tile")
                print(line)
            client.run(hpcml.release_cached_memory)
    shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
