#!/usr/bin/env python3
"""The GPU kernels' machine code, read from the build's sm_90 objects, with their budgets.

No GPU is needed: for each hot kernel (KERNELS in sass_kernels.py) this disassembles the sm_90 code that the
build compiled (cuobjdump extracts it, nvdisasm prints it with its source lines) and reports,
along its steady path (the loop doing the kernel's work, minus what the entry names as cold):
instructions per element by class, control-word stall cycles, global loads by width and the
bytes a thread has in flight before it first waits on them, local-memory accesses, registers,
spills, shared memory and occupancy, and the fraction of the kernel's floor that this code
predicts on an H100 SXM (H100 below). With --check it exits 1 when a kernel leaves one of its
budgets: facts about the compiled code, not timings, so they hold on a machine without a GPU.

The model (predicted, until the GPU suite measures it: docs/machine-code.md):
- issue: an SM issues 4 warp-instructions per clock (128 thread-instructions); FP64 arithmetic
  2 per clock; MUFU 0.5 per clock. A kernel of I instructions per element runs at most
  SMs x clock x 32 / max(I / 4, I_fp64 / 2, I_mufu / 0.5) elements/s, and at most a fraction
  (warps per scheduler x instructions / stall cycles) of that when too few warps hide the stalls.
- memory: bytes per element over HBM bandwidth, and Little's law: an SM keeps at most
  (bytes in flight per thread x resident threads) moving, against bandwidth x latency / SMs.
"""

import argparse
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

from sass_kernels import KERNELS, SORT_PASS
from sass_reading import (demangle, find_tool, load_rounds, loads_in_flight_bits, loops, parse_disassembly,
                          parse_resources, run, source_span)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_OBJECTS = "build/kernels/CMakeFiles/hpcml.dir"

# H100 SXM (sm_90): the machine the predictions are for.
H100 = {
    "sms": 132,
    "clock_hz": 1.98e9,
    "hbm_bytes_per_s": 3.35e12,
    "memory_latency_s": 1e-6,  # a DRAM load while HBM is saturated: the Little's-law latency (an assumption)
    "registers_per_sm": 65536,
    "shared_per_sm": 233472,  # 228 KiB
    "shared_reserved_per_block": 1024,
    "max_warps_per_sm": 64,
    "max_blocks_per_sm": 32,
    "schedulers_per_sm": 4,
}

# --- the report --------------------------------------------------------------------------------


def occupancy(resources, threads, dynamic_shared=0):
    warps = (threads + 31) // 32
    registers = max(resources.get("REG", 0), 1)
    per_warp = ((registers + 7) // 8) * 8 * 32  # allocated in units of 8 per thread
    by_registers = (H100["registers_per_sm"] // per_warp) // warps
    shared = resources.get("SHARED", 0) + dynamic_shared + H100["shared_reserved_per_block"]
    by_shared = H100["shared_per_sm"] // shared
    blocks = min(by_registers, by_shared, H100["max_warps_per_sm"] // warps, H100["max_blocks_per_sm"])
    return blocks, blocks * warps


def steady_loop(kernel, function):
    """The loop holding the most of the kernel's marker (or the whole function), split into its steady
    instructions and its cold ones (kernel.cold's source spans), and the steady loops inside it."""
    code = function["code"]
    spans_all = loops(function)
    spans = [s for s in spans_all if any(i.opcode.startswith(kernel.marker) for i in code[s[0]:s[1] + 1])]
    if kernel.whole:
        spans = [(0, len(code) - 1)]
    if not spans:
        return None
    first, last = max(spans, key=lambda s: (sum(i.opcode.startswith(kernel.marker) for i in code[s[0]:s[1] + 1]),
                                             -(s[1] - s[0])))
    body = code[first:last + 1]
    cold_spans = [source_span(os.path.join(ROOT, path), signature) for path, signature in kernel.cold]

    def is_cold(instruction):
        return any(f == file and lo <= line <= hi for file, lo, hi in cold_spans for f, line in instruction.lines)

    steady = [i for i in body if not is_cold(i)]
    # Loops inside the steady loop run more than once per pass: the counts below take them once.
    # A loop mostly of cold code is cold (the scheduler moves a few steady instructions into it).
    inner = sum(1 for s in spans_all if first <= s[0] and s[1] < last
                and 2 * sum(is_cold(i) for i in code[s[0]:s[1] + 1]) < s[1] + 1 - s[0])
    return body, steady, inner


def widths(instructions, prefix):
    """{width in bits: count} of the instructions whose opcode starts with prefix (LDG, STG)."""
    counts = {}
    for instruction in instructions:
        if instruction.opcode.startswith(prefix):
            counts[instruction.width_bits] = counts.get(instruction.width_bits, 0) + 1
    return counts


def issue_rate(issued, stall_cycles, elements, classes, warps):
    """Elements/s on an H100 as its issue slots, FP64 and MUFU pipes and latency hiding allow."""
    hiding = min(1.0, warps / H100["schedulers_per_sm"] * issued / max(stall_cycles, 1))
    clocks_per_element_warp = max(issued / elements / 4, classes.get("fp64", 0) / elements / 2,
                                  classes.get("mufu", 0) / elements / 0.5)
    return H100["sms"] * H100["clock_hz"] * 32 / clocks_per_element_warp * hiding


def predict(kernel, issue, in_flight, warps):
    """(floor elements/s, predicted fraction of it) on an H100 from the issue rate and, for
    memory-bound kernels, Little's law; (None, None) without a model."""
    if kernel.model is None:
        return None, None
    if kernel.model == "issue":
        floor_rate = H100["sms"] * H100["clock_hz"] * 128 / kernel.floor
        return floor_rate, issue / floor_rate
    floor_rate = H100["hbm_bytes_per_s"] / kernel.floor
    needed = H100["hbm_bytes_per_s"] * H100["memory_latency_s"] / H100["sms"]
    little = min(1.0, in_flight * warps * 32 / needed) if kernel.model == "memory" else 1.0
    return floor_rate, min(1.0, issue / floor_rate, little)


def source_path(path, function):
    """A trips entry's file: the project's (relative to its root), else the library header the code was
    compiled from (CUB's, say), whose whole path ends with `path` in the code's line information."""
    if os.path.exists(os.path.join(ROOT, path)):
        return os.path.join(ROOT, path)
    found = sorted(f for f in function["files"] if f.endswith("/" + path) and os.path.exists(f))
    if not found:
        sys.exit(f"sass_report: {path} is neither the project's nor a header the code's lines name")
    return found[0]


def trip_weights(kernel, steady, function):
    """How many times each steady instruction issues per pass: the product of the trips of the
    kernel's data-dependent loops (kernel.trips) whose source block holds one of its lines."""
    spans = [(source_span(source_path(path, function), signature), trips) for path, signature, trips in kernel.trips]
    weights = []
    for instruction in steady:
        weight = 1
        for (file, lo, hi), trips in spans:
            if any(f == file and lo <= line <= hi for f, line in instruction.lines):
                weight *= trips
        weights.append(weight)
    return weights


def analyse(kernel, function, resources):
    loop = steady_loop(kernel, function)
    if loop is None:
        return {"error": f"no loop with {kernel.marker} in the machine code"}
    body, steady, inner = loop
    cold = len(body) - len(steady)
    elements = kernel.elements or sum(i.opcode.startswith(kernel.marker) for i in steady) / kernel.markers_per_element
    weights = trip_weights(kernel, steady, function)
    classes = {}
    for instruction, weight in zip(steady, weights):
        classes[instruction.klass] = classes.get(instruction.klass, 0) + weight
    issued = sum(weights)
    per_element = issued / elements
    shared_loads = [(i, w) for i, w in zip(steady, weights) if i.opcode.startswith("LDS")]
    markers = [k for k, i in enumerate(body) if i.opcode.startswith(kernel.marker)]
    blocks, warps = occupancy(resources, kernel.threads, kernel.dynamic_shared)
    load_widths, store_widths = widths(steady, "LDG"), widths(function["code"], "STG")
    in_flight = loads_in_flight_bits(steady) // 8
    stores = [k for k, i in enumerate(steady) if i.opcode.startswith("STG")]
    stalls = sum(i.stall * w for i, w in zip(steady, weights))
    issue = issue_rate(issued, stalls, elements, classes, warps)
    floor_rate, predicted = predict(kernel, issue, in_flight, warps)
    result = {
        "function": kernel.function,
        "element": kernel.element,
        "elements per iteration": elements,
        "steady instructions": len(steady),
        "instructions per element": round(per_element, 3),
        "by class per element": {k: round(v / elements, 3) for k, v in sorted(classes.items(), key=lambda kv: -kv[1])},
        "stall cycles per element": round(stalls / elements, 3),
        "shared loads per element": round(sum(w for _, w in shared_loads) / elements, 3),
        "shared bytes loaded per element": round(sum(i.width_bits // 8 * w for i, w in shared_loads) / elements, 3),
        "inner loops on the steady path": inner,
        "cold instructions in the loop": cold,
        "global loads (bits: count)": load_widths,
        "global stores (bits: count)": store_widths,
        "vector stores": sum(n for bits, n in store_widths.items() if bits >= 64),
        "load bytes in flight per thread": in_flight,
        "global load rounds": load_rounds(steady),
        "global loads after the first global store":
            sum(i.opcode.startswith("LDG") for i in steady[stores[0]:]) if stores else 0,
        "widest global load (bits)": max(load_widths, default=0),
        "local accesses in the loop": sum(i.klass == "local" for i in body),
        "local accesses between first and last compare": sum(i.klass == "local" for i in body[markers[0]:markers[-1] + 1]),
        "registers": resources.get("REG"),
        "local memory bytes": resources.get("STACK", 0) + resources.get("LOCAL", 0),
        "shared memory bytes": resources.get("SHARED", 0) + kernel.dynamic_shared,
        "blocks per SM": blocks,
        "warps per SM": warps,
    }
    if kernel.trips:
        result["data-dependent loops counted (expected trips)"] = [trips for _, _, trips in kernel.trips]
    if kernel.versus or kernel.model is None:
        result["issue-bound elements/s (H100)"] = f"{issue:.3g}"
    if predicted is not None:
        result["predicted elements/s (H100)"] = f"{floor_rate * predicted:.3g}"
        result["floor elements/s (H100)"] = f"{floor_rate:.3g}"
        result["predicted fraction of floor"] = round(predicted, 3)
    if kernel.output_bytes:
        # The computation per output is per_element x samples issue slots; the write is fixed.
        result["output-bound below (samples)"] = round(
            kernel.output_bytes * 128 * H100["sms"] * H100["clock_hz"] / (H100["hbm_bytes_per_s"] * per_element), 1)
    if kernel.cold and kernel.model:
        # One cold element in a warp makes the warp walk both paths.
        result["warp cost of one cold element"] = round((len(steady) + cold) / len(steady), 1)
    return result


def check(kernel, result):
    failures = []
    for metric, (limit, kind) in kernel.budgets.items():
        value = result.get(metric)
        if value is None or (kind == "max" and value > limit) or (kind == "min" and value < limit):
            failures.append(f"{kernel.name}: {metric} = {value}, budget {kind} {limit}")
    return failures


def read_machine_code(kernels, objects):
    """{kernel name: its analysis} from the sm_90 code of the build's objects."""
    cuobjdump, nvdisasm = find_tool("cuobjdump"), find_tool("nvdisasm")
    disassembly, resources = {}, {}
    with tempfile.TemporaryDirectory() as scratch:
        for obj in sorted({k.obj for k in kernels}):
            path = os.path.join(objects, obj)
            if not os.path.exists(path):
                sys.exit(f"sass_report: {path} does not exist (--objects: the build's kernels/CMakeFiles/hpcml.dir, "
                         "built with CUDA)")
            folder = os.path.join(scratch, obj.replace("/", "_"))
            os.makedirs(folder)
            subprocess.run([cuobjdump, "-xelf", "all", os.path.abspath(path)], cwd=folder, capture_output=True)
            cubins = sorted(glob.glob(os.path.join(folder, "*.sm_90.cubin")))
            if not cubins:
                sys.exit(f"sass_report: {path} has no sm_90 machine code (build with CMAKE_CUDA_ARCHITECTURES "
                         "including 90)")
            disassembly.update(parse_disassembly(run([nvdisasm, "-c", "-gi", "-hex", cubins[0]])))
            resources.update(parse_resources(run([cuobjdump, "-res-usage", "-arch", "sm_90", path])))
    names = demangle(sorted(disassembly))
    report = {}
    for kernel in kernels:
        matches = [m for m, d in names.items() if re.search(kernel.function, d)]
        if len(matches) != 1:
            report[kernel.name] = {"error": f"{len(matches)} functions match {kernel.function!r}"}
        else:
            report[kernel.name] = analyse(kernel, disassembly[matches[0]], resources.get(matches[0], {}))
    for kernel in kernels:  # a method against another one doing the same work
        result = report[kernel.name]
        if kernel.versus and "error" not in result:
            other, per_element = kernel.versus
            rate = report.get(other, {}).get("predicted elements/s (H100)")
            if rate is not None:
                result["predicted x the other kernel"] = round(
                    float(result["issue-bound elements/s (H100)"]) * per_element / float(rate), 2)
                result["the other kernel"] = other
                sort = report.get(SORT_PASS, {}).get("issue-bound elements/s (H100)")
                for label, samples, pairs, values in kernel.shapes if sort else ():
                    pair_samples = samples * pairs
                    blocks = pair_samples / per_element / float(result["issue-bound elements/s (H100)"])
                    sorting = samples * values / float(sort)
                    result[f"with its sort pass x the other kernel: {label}"] = round(
                        pair_samples / float(rate) / (blocks + sorting), 2)
                    result[f"the sort pass's share: {label}"] = round(sorting / (blocks + sorting), 3)
    return report


def median_runs(folder, file, pattern, counter):
    """The median rows of `file`'s benchmarks named by `pattern` that have `counter`, or why none (text)."""
    path = os.path.join(folder, file)
    if not os.path.exists(path):
        return f"not measured ({file} is not in {folder})"
    try:
        with open(path) as f:
            benchmarks = json.load(f).get("benchmarks", [])
    except json.JSONDecodeError:
        return f"not measured ({file} is not whole JSON: its benchmark was cut short)"
    runs = [b for b in benchmarks if re.search(pattern, b["name"])
            and b.get("aggregate_name", "median") == "median" and counter in b]
    return runs or f"not measured (no median of {counter} in {file} for {pattern})"


def measured(kernel, result, folder):
    """What a GPU run measured for the kernel, as a fraction of its floor (a line of text)."""
    if not kernel.measured:
        return "no benchmark measures this kernel alone"
    file, pattern, counter, kind = kernel.measured
    runs = median_runs(folder, file, pattern, counter)
    if isinstance(runs, str):
        return runs
    value = max(b[counter] for b in runs)
    floor = float(result["floor elements/s (H100)"])
    fraction = {"fraction": value, "elements/s": value / floor, "bytes/s": value / H100["hbm_bytes_per_s"]}[kind]
    return (f"{fraction:.3f} of the floor measured ({counter} {value:.3g} in {file}), "
            f"{result['predicted fraction of floor']} predicted")


def measured_versus(kernel, folder):
    """The kernel's measured speed as a multiple of the other kernel's on the same problem (a line of text)."""
    milliseconds = []
    for file, pattern in kernel.measured_versus:
        runs = median_runs(folder, file, pattern, "real_time")
        if isinstance(runs, str):
            return runs
        run = runs[0]
        milliseconds.append(run["real_time"] * {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}[run.get("time_unit", "ns")])
    return f"{milliseconds[1] / milliseconds[0]:.2f} ({milliseconds[0]:.3g} ms against {milliseconds[1]:.3g} ms)"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--objects", default=DEFAULT_OBJECTS,
                        help=f"the build's object folder for libhpcml (default {DEFAULT_OBJECTS})")
    parser.add_argument("--check", action="store_true", help="exit 1 when a kernel leaves its budget")
    parser.add_argument("--json", metavar="FILE", help="also write the report as JSON")
    parser.add_argument("--kernel", metavar="TEXT", help="only the kernels whose name contains TEXT")
    parser.add_argument("--report", metavar="FILE",
                        help="a report --json wrote (on a machine without the objects: the GPU suite's)")
    parser.add_argument("--measured", metavar="DIR",
                        help="the GPU suite's results: print each kernel's measured fraction beside the predicted")
    args = parser.parse_args()

    kernels = [k for k in KERNELS if not args.kernel or args.kernel in k.name]
    if args.report:
        saved = json.load(open(args.report))["kernels"]
        report = {k.name: saved.get(k.name, {"error": f"not in {args.report}"}) for k in kernels}
    else:
        report = read_machine_code(kernels, args.objects)
    failures = []
    for kernel in kernels:
        result = report[kernel.name]
        failures += [f"{kernel.name}: {result['error']}"] if "error" in result else check(kernel, result)
        floor = (f"{kernel.model} floor: {kernel.floor} {'instructions' if kernel.model == 'issue' else 'bytes'} per "
                 f"{kernel.element}" if kernel.model else f"per {kernel.element}, no floor model")
        print(f"\n{kernel.name} ({floor}{'; ' + kernel.note if kernel.note else ''})")
        for key, value in result.items():
            if key != "function":
                print(f"  {key}: {value}")
        if args.measured and "error" not in result and kernel.model:
            print(f"  measured: {measured(kernel, result, args.measured)}")
        if args.measured and kernel.measured_versus:
            print(f"  measured x the other kernel: {measured_versus(kernel, args.measured)}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": "H100 SXM (predicted)", "model": H100, "kernels": report}, f, indent=1)
    if failures:
        print("\nsass_report: over budget:\n  " + "\n  ".join(failures))
        if args.check:
            sys.exit(1)
    elif args.check:
        print("\nsass_report: every kernel within its budgets")


if __name__ == "__main__":
    main()
