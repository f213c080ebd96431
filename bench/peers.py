"""What the comparison scripts share: the peer at its full speed, the machine (CPU or GPU), commit
and command at the head of each result, alternating rounds, and the floors hpcml is measured against.

Import it before NumPy: it removes OpenBLAS's CPU-type and cache-size overrides from the
environment (some machines set them, and they halve NumPy's GEMV), so that NumPy runs as its
users' NumPy runs.
"""

import os

for _variable in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
    os.environ.pop(_variable, None)

import concurrent.futures  # noqa: E402
import datetime  # noqa: E402
import pathlib  # noqa: E402
import shlex  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

import hpcml  # noqa: E402


def _cpuinfo():
    try:
        return pathlib.Path("/proc/cpuinfo").read_text()
    except OSError:
        return ""


def physical_cores():
    """Distinct (physical id, core id) pairs: hyperthreads share their core's pipes."""
    cores, package = set(), ""
    for line in _cpuinfo().splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "physical id":
            package = value.strip()
        elif key.strip() == "core id":
            cores.add((package, value.strip()))
    return len(cores) or os.cpu_count()


def clock_hz():
    """The clock /proc/cpuinfo gives (a virtual machine's may be the nominal one); 0 if unknown."""
    for line in _cpuinfo().splitlines():
        if line.startswith("cpu MHz"):
            return float(line.split(":")[1]) * 1e6
    return 0.0


# The peers whose versions a result records, where the script has imported them.
_PEER_LIBRARIES = ("numpy", "scipy", "numba", "torch", "cupy", "pandas", "dask", "distributed", "zarr")


def versions():
    """"Python 3.11.7, numpy 2.4.6, torch 2.11.0": the versions a run used (constraints.txt pins
    the ones CI and the results install), of the peers this script imported."""
    loaded = [f"{name} {sys.modules[name].__version__}" for name in _PEER_LIBRARIES if name in sys.modules]
    return ", ".join([f"Python {sys.version.split()[0]}"] + loaded)


def _provenance():
    """The commit, the date, the versions and the command."""
    here = pathlib.Path(__file__).resolve().parent
    commit = subprocess.run(["git", "-C", str(here), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip() or "unknown commit"
    command = "python3 " + " ".join(shlex.quote(a) for a in sys.argv)
    return f"hpcml {commit}; {datetime.date.today()}; {versions()}; `{command}`"


def header():
    """One line naming the machine, the commit, the date and the command, for bench/results/."""
    model = next((line.split(":", 1)[1].strip() for line in _cpuinfo().splitlines()
                  if line.startswith("model name")), "unknown CPU")
    flags = _cpuinfo()
    isa = "AVX-512" if " avx512f" in flags else "AVX2" if " avx2" in flags else "baseline x86-64 or other"
    cap = f" (HPCML_CPU_KERNEL={os.environ['HPCML_CPU_KERNEL']})" if os.environ.get("HPCML_CPU_KERNEL") else ""
    return (f"{model}, {isa}, hpcml CPU kernel {hpcml.cpu_kernel()}{cap}, {physical_cores()} cores"
            f" at {clock_hz() / 1e9:.2f} GHz (nominal); {_provenance()}")


def gpu_header(device=0):
    """header() for the GPU comparison scripts: the device, its driver, the commit, date and command."""
    d = hpcml.devices()[device]
    major, minor = d["compute_capability"]
    return (f"{d['name']} (sm_{major}{minor}, {d['multiprocessors']} SMs at {d['sm_clock_khz'] / 1e6:.2f} GHz, "
            f"{d['peak_memory_bandwidth_gbps']:.0f} GB/s peak); driver {hpcml.cuda_status()['driver_version']}; "
            f"{_provenance()}")


def gpu_similarity_floor(pair_samples, device=0):
    """Seconds the GPU's similarity kernel needs at least for `pair_samples` comparisons: 3
    instructions each (subtract, compare, accumulate) at 128 thread-instructions per clock per SM
    (docs/similarity.md), at the device's maximum SM clock."""
    d = hpcml.devices()[device]
    return pair_samples * 3 / (128 * d["multiprocessors"] * d["sm_clock_khz"] * 1e3)


def gpu_bandwidth(device=0):
    """The device's theoretical memory bandwidth in bytes per second (the floor's denominator of
    a memory-bound GPU kernel: bench_*'s bandwidth_fraction uses the same figure)."""
    return hpcml.devices()[device]["peak_memory_bandwidth_gbps"] * 1e9


def alternate(runs, rounds, settle=0.25):
    """{name: [seconds per round]}: each round calls every run once, in order, each `settle`
    seconds after the one before. The pause is for the peer's threads: OpenBLAS's keep spinning
    for about 0.1 s after a call (its THREAD_TIMEOUT), and would otherwise take a core from the
    run that follows (a 4096 x 4096 regret run took 0.25 s right after NumPy's, 0.20 s after a
    pause)."""
    times = {name: [] for name in runs}
    for _ in range(rounds):
        for name, run in runs.items():
            time.sleep(settle)
            start = time.perf_counter()
            run()
            times[name].append(time.perf_counter() - start)
    return times


def medians(times):
    return {name: statistics.median(t) for name, t in times.items()}


def similarity_floor(pair_samples):
    """Seconds the CPU's similarity kernel needs at least for `pair_samples` comparisons: the
    level's pair-samples per cycle (hpcml.cpu_kernel_pair_samples_per_cycle) on every physical
    core at the clock /proc/cpuinfo gives (bench_similarity's floor_fraction)."""
    rate = hpcml.cpu_kernel_pair_samples_per_cycle() * physical_cores() * clock_hz()
    return pair_samples / rate if rate else float("nan")


def stream_bandwidth(megabytes=256, repeats=5):
    """Bytes per second of an add (a = b + c) over arrays 8x the last-level cache and more, one
    slice per core in threads (NumPy releases the GIL): the memory-bandwidth floor's denominator."""
    n = megabytes * 2**20 // 8
    a, b, c = np.empty(n), np.ones(n), np.ones(n)
    cores = physical_cores()
    bounds = [(k * n // cores, (k + 1) * n // cores) for k in range(cores)]
    with concurrent.futures.ThreadPoolExecutor(cores) as pool:
        best = float("inf")
        for _ in range(repeats):
            start = time.perf_counter()
            list(pool.map(lambda r: np.add(b[r[0]:r[1]], c[r[0]:r[1]], out=a[r[0]:r[1]]), bounds))
            best = min(best, time.perf_counter() - start)
    return 3 * a.nbytes / best
