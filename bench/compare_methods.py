#!/usr/bin/env python3
"""Two similarity methods side by side: rounds of `bench_similarity ARGS --method A` then the same
with `--method B`, alternating, each round one Google Benchmark run; prints every round's times,
then per benchmark row the medians and the median of the rounds' ratios A / B (how much faster B
is), with the CPU's model name. The ratio of two runs in the same round holds where the machine's
speed drifts between rounds. With --auto each round also runs `--method auto`: which method it
ran, and its time over the faster of A and B in the same round.

    bench/compare_methods.py --rounds 5 -- --backend cpu --dim 8000 --tile 8000
    bench/compare_methods.py --a fused --b sorted --bin build/bin/bench_similarity -- --mode all --dim 20000 --tile 20000
    bench/compare_methods.py --auto --rounds 3 -- --backend cpu --deliver sink --tile 256 --dim 4000 --dim-y 4000
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
    """The manual_time rows of one run: {row name with the method's part removed: (milliseconds, label)}."""
    out = subprocess.run([binary, *args, "--method", method, "--benchmark_repetitions=1"],
                         capture_output=True, text=True, check=True).stdout
    times = {}
    for line in out.splitlines():
        line = re.sub(r"\x1b\[[0-9;]*m", "", line)
        m = re.match(r"similarity/([^/]+)/(\S+)/manual_time\s+([0-9.]+) (ns|us|ms|s)\b", line)
        if m:
            variant = m.group(1).replace(method, "", 1)  # "sorted-plain" -> "-plain"
            label = re.search(r"ran (\w+)", line)
            times[f"{variant.lstrip('-') or 'y=x'} {m.group(2)}"] = (float(m.group(3)) * UNITS[m.group(4)],
                                                                   label.group(1) if label else method)
    return times


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--a", default="fused", help="the method compared against (default fused)")
    parser.add_argument("--b", default="sorted", help="the method measured (default sorted)")
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds (default 5)")
    parser.add_argument("--bin", default="build/bin/bench_similarity", help="the benchmark program")
    parser.add_argument("--auto", action="store_true", help="also run --method auto each round")
    parser.add_argument("args", nargs="*", help="bench_similarity's arguments, after --")
    o = parser.parse_args()
    if o.rounds < 1:
        parser.error("--rounds: at least 1")
    print(f"# {cpu_model()}; {o.bin} {' '.join(o.args)}; {o.a} then {o.b}, {o.rounds} rounds")
    rounds = []
    for k in range(o.rounds):
        a, b = run(o.bin, o.args, o.a), run(o.bin, o.args, o.b)
        auto = run(o.bin, o.args, "auto") if o.auto else {}
        rounds.append((a, b, auto))
        print(f"round {k + 1}: " + "; ".join(
            f"{row}: {a[row][0]:.2f} / {b[row][0]:.2f} ms" +
            (f" / auto ({auto[row][1]}) {auto[row][0]:.2f} ms" if row in auto else "") for row in a if row in b),
            flush=True)
    for row in rounds[0][0]:
        kept = [(a[row][0], b[row][0], auto.get(row)) for a, b, auto in rounds if row in a and row in b]
        if not kept:
            continue
        ratios = [x / y for x, y, _ in kept]
        line = (f"{row}: {o.a} {statistics.median(x for x, _, _ in kept):.2f} ms, {o.b} "
                f"{statistics.median(y for _, y, _ in kept):.2f} ms, {o.a}/{o.b} {statistics.median(ratios):.2f}x "
                f"(rounds {min(ratios):.2f}-{max(ratios):.2f}x)")
        if all(auto for _, _, auto in kept):
            over = [auto[0] / min(x, y) for x, y, auto in kept]
            line += (f"; auto ran {'/'.join(sorted({auto[1] for _, _, auto in kept}))}, "
                     f"{statistics.median(over):.2f}x the faster")
        print(line)


if __name__ == "__main__":
    sys.exit(main())
