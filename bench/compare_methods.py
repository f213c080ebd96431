#!/usr/bin/env python3
"""Two similarity methods side by side: rounds of `bench_similarity ARGS --method A` then the same
with `--method B`, alternating, each round one Google Benchmark run; prints every round's times,
then per benchmark row the medians and the median of the rounds' ratios A / B (how much faster B
is), with the CPU's model name. The ratio of two runs in the same round holds where the machine's
speed drifts between rounds.

    bench/compare_methods.py --rounds 5 -- --backend cpu --dim 8000 --tile 8000
    bench/compare_methods.py --a fused --b sorted --bin build/bin/bench_similarity -- --mode all --dim 20000 --tile 20000
"""
import argparse
import re
import statistics
import subprocess
import sys

UNITS = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def run(binary, args, method):
    """The manual_time rows of one run: {row name with the method's part removed: milliseconds}."""
    out = subprocess.run([binary, *args, "--method", method, "--benchmark_repetitions=1"],
                         capture_output=True, text=True, check=True).stdout
    times = {}
    for line in out.splitlines():
        line = re.sub(r"\x1b\[[0-9;]*m", "", line)
        m = re.match(r"similarity/([^/]+)/(\S+)/manual_time\s+([0-9.]+) (ns|us|ms|s)\b", line)
        if m:
            variant = m.group(1).replace(method, "", 1) or "y=x"  # "sorted-plain" -> "-plain"
            times[f"{variant.lstrip('-') or 'y=x'} {m.group(2)}"] = float(m.group(3)) * UNITS[m.group(4)]
    return times


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--a", default="fused", help="the method compared against (default fused)")
    parser.add_argument("--b", default="sorted", help="the method measured (default sorted)")
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds (default 5)")
    parser.add_argument("--bin", default="build/bin/bench_similarity", help="the benchmark program")
    parser.add_argument("args", nargs="*", help="bench_similarity's arguments, after --")
    o = parser.parse_args()
    if o.rounds < 1:
        parser.error("--rounds: at least 1")
    print(f"# {cpu_model()}; {o.bin} {' '.join(o.args)}; {o.a} then {o.b}, {o.rounds} rounds")
    rounds = []
    for k in range(o.rounds):
        a, b = run(o.bin, o.args, o.a), run(o.bin, o.args, o.b)
        rounds.append((a, b))
        print(f"round {k + 1}: " + "; ".join(f"{row}: {a[row]:.2f} / {b[row]:.2f} ms" for row in a if row in b),
              flush=True)
    for row in rounds[0][0]:
        pairs = [(a[row], b[row]) for a, b in rounds if row in a and row in b]
        if not pairs:
            continue
        ratios = [x / y for x, y in pairs]
        print(f"{row}: {o.a} {statistics.median(x for x, _ in pairs):.2f} ms, {o.b} "
              f"{statistics.median(y for _, y in pairs):.2f} ms, {o.a}/{o.b} {statistics.median(ratios):.2f}x "
              f"(rounds {min(ratios):.2f}-{max(ratios):.2f}x)")


if __name__ == "__main__":
    sys.exit(main())
