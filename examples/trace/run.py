#!/usr/bin/env python3
"""The seed's pyNVML trace beside hpcml-trace, around the same workload: both traces written in
the seed's format (';'-separated, its header), compared, and plotted with the seed's own
post-processing (plot_trace.py).

1. The seed: gpu_trace.py samples the GPU every 0.1 s in a Python loop while the workload runs;
   it loops until killed, so it is stopped with SIGINT (its `with` block then flushes the file).
2. hpcml: `hpcml-trace --output hpcml.csv -- WORKLOAD` samples every 100 ms from C++ threads,
   starting and stopping with the workload.
The workload (--workload, run by the shell) defaults to hpcml's similarity on the GPU for
--seconds. The comparison: the same header, samples about every 0.1 s, energy that never
decreases, and each column's median side by side (they are measurements of the same GPU, not
exact; with the tests' fake NVML they are equal, but for power: the seed reads
nvmlDeviceGetPowerUsage, a one-second average on Ampere and later, and hpcml-trace NVML's
instantaneous power where the driver has it, as its summary says). Exit status: 0 when both traces were written
and agree as above; 1 otherwise; 2 where there is no NVML to trace with (the reason printed).
"""

import argparse
import os
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
HEADER = "Timestamp;Temperature [C];Power [% max];GPU Util [% time];Mem Util [% time];Mem Cons [% max];Energy [kJ]"


def default_workload(seconds: float) -> str:
    code = ("import time, numpy as np, hpcml; x = np.random.default_rng(0).standard_normal((256, 8000))"
            ".astype(np.float32); end = time.time() + {s}\n"
            "while time.time() < end: hpcml.similarity(x, tile=1000)").format(s=seconds)
    return f"{shlex.quote(sys.executable)} -c {shlex.quote(code)}"


def read(path: str) -> tuple[str, list[list[float]]]:
    with open(path) as f:
        lines = f.read().splitlines()
    rows = [[float(v) for v in line.split(";")] for line in lines[1:] if line]
    return (lines[0] if lines else ""), rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", type=int, default=0, help="the GPU (NVML index for the seed, CUDA ordinal for hpcml)")
    parser.add_argument("--seconds", type=float, default=5.0, help="the default workload's length")
    parser.add_argument("--workload", help="a shell command to trace instead of hpcml's similarity")
    parser.add_argument("--out-dir", default=".", help="where seed.csv, hpcml.csv and their figures go")
    parser.add_argument("--tool", default=shutil.which("hpcml-trace"), help="hpcml-trace (default: on PATH)")
    args = parser.parse_args()
    if not args.tool:
        sys.exit("run.py: hpcml-trace not found (build hpcml, or pass --tool)")
    workload = args.workload or default_workload(args.seconds)
    os.makedirs(args.out_dir, exist_ok=True)
    seed_csv, hpcml_csv = os.path.join(args.out_dir, "seed.csv"), os.path.join(args.out_dir, "hpcml.csv")

    # SIGINT restored in the child: a shell's background job (`... &`) starts with it ignored,
    # which Python inherits, and the seed's loop would then never stop.
    tracer = subprocess.Popen([sys.executable, os.path.join(HERE, "gpu_trace.py"), str(args.device), seed_csv],
                              stderr=subprocess.PIPE, text=True,
                              preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    time.sleep(1.0)  # pyNVML's import and init
    if tracer.poll() is not None:
        assert tracer.stderr is not None  # stderr=PIPE
        reason = (tracer.stderr.read().strip().splitlines() or ["no message"])[-1]
        print(f"run.py: no GPU telemetry: the seed's trace could not start: {reason}", file=sys.stderr)
        sys.exit(2)
    start = time.perf_counter()
    subprocess.run(workload, shell=True, check=True)
    seed_seconds = time.perf_counter() - start
    tracer.send_signal(signal.SIGINT)  # KeyboardInterrupt: the seed's `with` closes the file
    try:
        tracer.wait(timeout=30)
    except subprocess.TimeoutExpired:
        tracer.kill()
        sys.exit("run.py: the seed's trace did not stop within 30 s of SIGINT; killed")

    start = time.perf_counter()
    # --strict: a GPU trace or none (without GPU telemetry hpcml-trace would time the workload alone).
    traced = subprocess.run([args.tool, "--strict", "--device", str(args.device), "--output", hpcml_csv, "--",
                             "sh", "-c", workload], capture_output=True, text=True)
    hpcml_seconds = time.perf_counter() - start
    if traced.returncode == 2:
        print(f"hpcml-trace: {traced.stderr.strip()}", file=sys.stderr)  # it says "no GPU telemetry"
        sys.exit(2)
    if traced.returncode != 0:
        sys.exit(f"run.py: hpcml-trace exited {traced.returncode}: {traced.stderr.strip()}")

    ok = True
    traces = {}
    for name, path in (("seed", seed_csv), ("hpcml", hpcml_csv)):
        header, rows = read(path)
        traces[name] = rows
        if header != HEADER:
            print(f"{name}: the header differs from the seed's: {header!r}")
            ok = False
        if len(rows) < 2:
            print(f"{name}: {len(rows)} samples")
            ok = False
            continue
        energy = [r[6] for r in rows]
        if any(b < a for a, b in zip(energy, energy[1:])):
            print(f"{name}: the energy decreases")
            ok = False
        steps = [b[0] - a[0] for a, b in zip(rows, rows[1:])]
        print(f"{name:5s}: {len(rows):4d} samples, every {statistics.median(steps) * 1e3:6.1f} ms (median), "
              f"energy {energy[-1]:.3f} kJ over the workload")
        # The seed's pandas code, which pandas 3 warns about (DataFrame.set_index(inplace=True)).
        subprocess.run([sys.executable, os.path.join(HERE, "plot_trace.py"), path, path[:-4] + ".png"], check=True,
                       env=dict(os.environ, PYTHONWARNINGS="ignore"))
    if not ok:
        sys.exit(1)
    names = HEADER.split(";")
    print(f"{'median of':22s} {'seed':>10s} {'hpcml':>10s}")
    for column in range(1, 6):
        a, b = (statistics.median(r[column] for r in traces[n]) for n in ("seed", "hpcml"))
        print(f"{names[column]:22s} {a:10.2f} {b:10.2f}")
    print(f"workload: {seed_seconds:.2f} s under the seed's trace, {hpcml_seconds:.2f} s under hpcml-trace; "
          f"figures {seed_csv[:-4]}.png and {hpcml_csv[:-4]}.png")


if __name__ == "__main__":
    main()
