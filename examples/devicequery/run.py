#!/usr/bin/env python3
"""The seed's query_GPU.cu beside hpcml-devicequery: compiled with nvcc, both run, their devices
compared field by field (name, integrated, compute capability, global memory, multiprocessors,
peak bandwidth), both timed.

The seed as written does not compile with CUDA 13, whose cudaDeviceProp lost memoryClockRate;
query_GPU_cuda13.cu is the seed with that one read changed (cudaDeviceGetAttribute), used where
the seed fails to compile. The seed checks no error: without a driver cudaGetDeviceCount fails and
the seed loops over an uninitialised count (it printed nothing here); hpcml-devicequery says why
there is no device and exits 2. Exit status: 0 when the two agree, or when there is no device to
compare (the reason printed); 1 when they disagree or a step fails unexpectedly.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Any, Callable, Optional

HERE = os.path.dirname(os.path.abspath(__file__))


def find_tool(given: Optional[str]) -> str:
    candidates = [given] if given else [shutil.which("hpcml-devicequery"),
                                        os.path.join(HERE, "..", "..", "build", "bin", "hpcml-devicequery")]
    for path in candidates:
        if path and os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    sys.exit("run.py: hpcml-devicequery not found (build with CUDA, or pass --tool)")


def timed(command: list[str]) -> tuple[subprocess.CompletedProcess[str], float]:
    start = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True)
    return result, time.perf_counter() - start


def compile_seed(nvcc: str, build: str) -> tuple[str, str]:
    """The seed's binary, or its CUDA 13 variant where the seed does not compile; and which."""
    for source in ("query_GPU.cu", "query_GPU_cuda13.cu"):
        binary = os.path.join(build, source[:-3])
        result = subprocess.run([nvcc, os.path.join(HERE, source), "-o", binary], capture_output=True, text=True)
        if result.returncode == 0:
            return binary, source
        missing = "memoryClockRate" in result.stderr
        print(f"{source}: does not compile with {nvcc}" +
              (" (cudaDeviceProp has no memoryClockRate since CUDA 13)" if missing else f":\n{result.stderr}"))
        if not missing:
            sys.exit(1)
    sys.exit(1)


def seed_devices(text: str) -> list[dict[str, Any]]:
    """The seed's printout as one dict per device."""
    devices: list[dict[str, Any]] = []  # str, int or float values, compared by key with the JSON report's
    for block in re.split(r"Device Number: \d+\n", text)[1:]:
        # A field the seed did not print: re.search gives None, and this fails (AttributeError) as before.
        field: Callable[[str], str] = (  # noqa: E731
            lambda name: re.search(rf"{name}: (.*)", block).group(1).strip())  # type: ignore[union-attr]
        devices.append({"name": field("Name"), "integrated": int(field("Integrated")),
                        "compute_capability": field("Compute capability"),
                        "peak_memory_bandwidth_gbps": float(field(r"Peak Memory Bandwidth \(GB/s\)")),
                        "global_memory_bytes": int(field("Total global mem")),
                        "multiprocessors": int(field("Multiprocessor count"))})
    return devices


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nvcc", default=os.environ.get("NVCC", "nvcc"))
    parser.add_argument("--tool", help="hpcml-devicequery (default: on PATH, else build/bin)")
    args = parser.parse_args()
    tool = find_tool(args.tool)
    if not shutil.which(args.nvcc):
        sys.exit(f"run.py: {args.nvcc} not found (the CUDA toolkit's compiler; --nvcc)")
    with tempfile.TemporaryDirectory() as build:
        binary, source = compile_seed(args.nvcc, build)
        seed, seed_seconds = timed([binary])
    ours, ours_seconds = timed([tool, "--json"])
    if ours.returncode not in (0, 2):
        sys.exit(f"run.py: {tool} failed ({ours.returncode}): {ours.stderr}")
    report = json.loads(ours.stdout)
    print(f"{source}: {seed_seconds * 1e3:.0f} ms, exit {seed.returncode}, {len(seed_devices(seed.stdout))} device(s); "
          f"hpcml-devicequery: {ours_seconds * 1e3:.0f} ms, exit {ours.returncode}, {len(report['devices'])} device(s)")
    if not report["devices"]:
        print(f"nothing to compare: {report['message']}")
        return
    theirs = seed_devices(seed.stdout)
    if len(theirs) != len(report["devices"]):
        sys.exit(f"run.py: the seed lists {len(theirs)} devices, hpcml-devicequery {len(report['devices'])}")
    for a, b in zip(theirs, report["devices"]):
        for key, value in a.items():
            mine = b[key]
            same = abs(mine - value) <= 0.05 + 1e-9 * value if key == "peak_memory_bandwidth_gbps" else \
                (int(mine) if key == "integrated" else mine) == value
            if not same:
                sys.exit(f"run.py: {a['name']}: {key} is {value} in the seed, {mine} in hpcml-devicequery")
    print("every device agrees: name, integrated, compute capability, global memory, multiprocessors, peak bandwidth")


if __name__ == "__main__":
    main()
