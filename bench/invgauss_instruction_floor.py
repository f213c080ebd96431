#!/usr/bin/env python3
"""The instruction floor of the CPU's vectorised inverse-Gaussian loops, read from the machine code.

For each function, the instance of its elementwise loop for one instruction set (--level: the
AVX-512 or the AVX2 one) in the build's object file (kernels/invgauss/cpu.cpp.o): the
instructions of the innermost loop vectorised at that level's width (the one storing a zmm
register, 8 doubles, or a ymm register, 4, to the output), plus, for each call in it to glibc's
vector math (libmvec), the instructions of that function's fast path (its entry to its first
ret, from libmvec.a), per element. At the core's issue rate (--per-cycle, default 4 instructions per cycle), clock (from
/proc/cpuinfo unless --ghz) and core count, that is the time floor of 1e7 elements, which
bench/compare_scipy_elementwise.py's measured times are set against. (The cdf family is one loop:
its erfcx and erfcx difference are polynomials, erfcx_cpu.hpp's erfcx_pair, with no far-tail pass.)

The quantile (ppf) iterates, in lock step over blocks of elements (cpu.cpp's QuantileBlock): its
floor is that of its three innermost vectorised loops, told apart by their libmvec calls, each
times how often it runs per element: the solve step QUANTILE_STEPS times (the average at IG(1, 1)
and uniform probabilities, the comparison's workload, counted element by element), the polish's
start once and its step three times.
"""

import argparse
import os
import re
import subprocess
import sys

FUNCTIONS = {  # name: (its vectorised loop's function, as a pattern of its name; the libmvec calls it needs per vector)
    "pdf": (r"evaluate_loop<double, .*\bApply<double, hpcml::detail::invgauss::PdfEntry> ?>", ["exp", "log"]),
    "cdf": (r"evaluate_loop<double, .*\bApplyCommon<double, hpcml::detail::invgauss::CdfEntry> ?>", ["exp"]),
    "sf": (r"evaluate_loop<double, .*\bApplyCommon<double, hpcml::detail::invgauss::SfEntry> ?>", ["exp"]),
    "logcdf": (r"evaluate_loop<double, .*\bApplyCommon<double, hpcml::detail::invgauss::LogCdfEntry> ?>",
               ["exp", "log"]),
    "logsf": (r"evaluate_loop<double, .*\bApplyCommon<double, hpcml::detail::invgauss::LogSfEntry> ?>", ["exp", "log"]),
    "sample": (r"cpu_sample<double>", ["cos", "log"]),
}
QUANTILE_STEPS = 7.3
QUANTILE_LOOPS = {  # name: (its libmvec calls per vector, its runs per element)
    "solve step": (["exp", "exp", "exp", "log", "log", "log"], QUANTILE_STEPS),
    "polish start": (["exp", "exp"], 1),
    "polish step": (["exp", "exp", "log", "log"], 3),
}
LEVELS = {  # hpcml.cpu_kernel()'s name: (its instance in cpu.cpp.o, its vector register, doubles per register)
    "avx512": ("Avx512Level::run<", "%zmm", 8),
    "avx2": ("Avx2Level::run<", "%ymm", 4),
}
LIBMVEC_PREFIX = {8: "_ZGVeN8v_", 4: "_ZGVdN4v_"}  # libmvec's variant names, by doubles per register
DEFAULT_OBJECT = "build/kernels/CMakeFiles/hpcml.dir/invgauss/cpu.cpp.o"
DEFAULT_LIBMVEC = "/usr/lib/x86_64-linux-gnu/libmvec.a"


def disassemble(path):
    return subprocess.run(["objdump", "-dr", "--no-show-raw-insn", "-C", path], capture_output=True, text=True,
                          check=True).stdout


def instructions(text):
    """[(address, mnemonic, operands, called symbol or None)] of one function's disassembly."""
    out = []
    for line in text.split("\n")[1:]:
        if "R_X86_64" in line:
            if "PLT32" in line and out:
                out[-1][3] = line.split()[-1].split("-")[0]
            continue
        m = re.match(r"\s+([0-9a-f]+):\s+(\S+)\s*(.*)", line)
        if m:
            out.append([int(m.group(1), 16), m.group(2), m.group(3), None])
    return out


def output_stores(span, register):
    """The instructions of `span` that store a `register` vector of doubles to memory (not the stack)."""
    return [i for i in span if i[1] == "vmovupd" and i[2].startswith(register) and "%rbp" not in i[2]]


def loops(code):
    """Each span of `code` closed by a backward jump: the instructions from its target to the jump."""
    for address, mnemonic, operands, _ in code:
        target = re.match(r"([0-9a-f]+)", operands)
        if mnemonic.startswith("j") and target and int(target.group(1), 16) < address:
            yield [i for i in code if int(target.group(1), 16) <= i[0] <= address]


def hot_loop(code, register):
    """The smallest loop that stores a `register` vector to memory."""
    spans = [span for span in loops(code) if output_stores(span, register)]
    return min(spans, key=len) if spans else None


def innermost_vector_loops(code, prefix):
    """The innermost loops that call a libmvec variant whose name starts with prefix."""
    spans = [span for span in loops(code) if any(i[3] and i[3].startswith(prefix) for i in span)]
    return [s for s in spans if not any(o is not s and s[0][0] <= o[0][0] and o[-1][0] <= s[-1][0] for o in spans)]


def loop_count(loop, libmvec, lanes, elements):
    """(instructions per element, own per element, libmvec calls, vectors per iteration) of one
    vectorised loop of `elements` per iteration."""
    calls = [i[3] for i in loop if i[1] == "call" and i[3]]
    vector_calls = [c for c in calls if c.startswith("_ZGV")]
    own = (len(loop) - len(calls)) / elements
    return own + sum(fast_path_length(libmvec, c) for c in vector_calls) / elements, own, vector_calls, elements // lanes


def fast_path_length(libmvec, symbol):
    """Instructions from a libmvec variant's entry to its first ret (its in-range path)."""
    suffix = "_skx" if symbol.startswith("_ZGVe") else "_avx2"
    m = re.search(r"<" + re.escape(symbol + suffix) + r">:\n(.*?)(\n\n|\Z)", libmvec, re.S)
    count = 0
    for line in m.group(1).split("\n"):
        if re.match(r"\s+[0-9a-f]+:", line):
            count += 1
            if "\tret" in line:
                break
    return count


def clock_ghz():
    for line in open("/proc/cpuinfo"):
        if line.startswith("cpu MHz"):
            return float(line.split(":")[1]) / 1e3
    return 0.0


def instruction_counts(object_path, libmvec_path, level="avx512"):
    """{loop: (instructions per element, own per element, libmvec calls)}; None where not vectorised."""
    instance, register, lanes = LEVELS[level]
    functions = re.split(r"\n(?=[0-9a-f]+ <)", disassemble(object_path))
    heads = [(f.split("\n", 1)[0], f) for f in functions]
    libmvec = subprocess.run(["objdump", "-d", "--no-show-raw-insn", libmvec_path], capture_output=True,
                             text=True, check=True).stdout
    counts = {}
    for name, (pattern, _) in FUNCTIONS.items():
        matches = [f for head, f in heads if instance in head and re.search(pattern, head)]
        loop = hot_loop(instructions(matches[0]), register) if matches else None
        # Elements per iteration: GCC may unroll (sample's 32-bit draws fill a register with 16 lanes).
        counts[name] = None if loop is None else loop_count(loop, libmvec, lanes, lanes * len(output_stores(loop, register)))
    counts["ppf"] = quantile_count([f for head, f in heads if instance in head and "quantile_loop<double>" in head],
                                   libmvec, lanes)
    return counts


def quantile_count(functions, libmvec, lanes):
    """ppf's (instructions per element, own, libmvec calls) over QUANTILE_LOOPS; None where one is missing."""
    prefix = LIBMVEC_PREFIX[lanes]
    loops = {}
    for loop in innermost_vector_loops(instructions(functions[0]), prefix) if functions else []:
        count = loop_count(loop, libmvec, lanes, lanes)
        called = sorted(c.split("v_")[-1] for c in count[2] if c.startswith(prefix))
        for name, (needs, _) in QUANTILE_LOOPS.items():
            if called == needs:
                loops[name] = count
    if len(loops) < len(QUANTILE_LOOPS):
        return None
    total = sum(loops[name][0] * runs for name, (_, runs) in QUANTILE_LOOPS.items())
    own = sum(loops[name][1] * runs for name, (_, runs) in QUANTILE_LOOPS.items())
    return total, own, [c for name in QUANTILE_LOOPS for c in loops[name][2]], 1


def floor_seconds(object_path, libmvec_path, elements, per_cycle=4.0, ghz=0.0, level="avx512"):
    """{function: the floor of `elements` elements, in seconds}."""
    ghz = ghz or clock_ghz()
    counts = instruction_counts(object_path, libmvec_path, level)
    rate = per_cycle * ghz * 1e9 * os.cpu_count()
    floors = {}
    for name, count in counts.items():
        if count is not None:
            floors[name] = elements * count[0] / rate
    return floors


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--object", default=DEFAULT_OBJECT)
    parser.add_argument("--libmvec", default=DEFAULT_LIBMVEC)
    parser.add_argument("--level", choices=[*LEVELS, "all"], default="all", help="the instance(s) to read")
    parser.add_argument("--per-cycle", type=float, default=4.0, help="instructions issued per cycle per core")
    parser.add_argument("--ghz", type=float, default=0.0, help="clock (default: /proc/cpuinfo's)")
    parser.add_argument("--require-vectorised", action="store_true",
                        help="exit 1 where a loop is not vectorised at its level's width, or calls libmvec other"
                             " than its formula needs (the test suite's check)")
    args = parser.parse_args()
    for path in (args.object, args.libmvec):
        if not os.path.exists(path):
            sys.exit(f"invgauss_instruction_floor: {path} not found (build first; libmvec.a is libc6-dev's)")
    ghz = args.ghz or clock_ghz()
    rate = args.per_cycle * ghz * 1e9 * os.cpu_count()
    faults = []
    for level in LEVELS if args.level == "all" else [args.level]:
        lanes = LEVELS[level][2]
        print(f"{level} instances; {args.per_cycle:g} instructions per cycle at {ghz:.2f} GHz"
              f" on {os.cpu_count()} cores")
        print(f"| loop | instructions per element (loop + libmvec) | libmvec calls per {lanes} elements |"
              " floor of 1e7 elements |")
        print("|---|---|---|---|")
        for name, count in instruction_counts(args.object, args.libmvec, level).items():
            if count is None:
                print(f"| {name} | not vectorised {lanes} wide | | |")
                faults.append(f"{name} ({level}) is not vectorised {lanes} wide")
                continue
            total, own, calls, per_vector = count
            called = sorted(c.split("v_")[-1] for c in calls)
            if name in FUNCTIONS and called != sorted(FUNCTIONS[name][1] * per_vector):
                faults.append(f"{name} ({level}) calls {', '.join(called)} per {per_vector} vectors; its formula"
                              f" needs {', '.join(FUNCTIONS[name][1])} per vector")
            names = ", ".join(f"{calls.count(c) / per_vector:g} {c.split('v_')[-1]}" for c in sorted(set(calls)))
            if name == "ppf":
                names = ", ".join(f"{runs:g} x {loop} ({', '.join(needs)})" for loop, (needs, runs) in QUANTILE_LOOPS.items())
            print(f"| {name} | {total:.0f} ({own:.0f} + {total - own:.0f}) | {names} |"
                  f" {1e7 * total / rate * 1e3:.1f} ms |")
        print()
    if args.require_vectorised and faults:
        sys.exit(f"invgauss_instruction_floor: {'; '.join(faults)}")


if __name__ == "__main__":
    main()
