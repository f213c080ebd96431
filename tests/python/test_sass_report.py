"""bench/sass_report.py and bench/sass_reading.py: the parsing of nvdisasm's output, the budgets
and the measured-beside-predicted lines, on small inputs written here (ctest's sass_budgets runs
the report on the build's own objects)."""

import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "bench", "sass_report.py")
sys.path.insert(0, os.path.join(ROOT, "bench"))
import sass_reading  # noqa: E402

# Three instructions of nvdisasm -c -gi -hex: a load that sets scoreboard 2, a loop label, a
# compare that waits on it (wait mask 0b100) and a backward branch; line info before each.
DISASSEMBLY = """
.text._Z6kernelv:
        /*0000*/                   LDG.E.128 R4, desc[UR4][R2.64] ;   /* 0x0000000402047981 */
                                                                      /* 0x000ea8000c1e1d00 */
.L_x_1:
	//## File "/src/kernels/x.hpp", line 12 inlined at "/src/kernels/k.cu", line 40
	//## File "/src/kernels/k.cu", line 40
        /*0010*/                   FSET.BF.LT.AND R8, |R4|, UR12, PT ;   /* 0x0000000c04087c0a */
                                                                      /* 0x004fe2000bf01000 */
        /*0020*/               @P0 BRA `(.L_x_1) ;                    /* 0xfffffffc00f80947 */
                                                                      /* 0x000fea000383ffff */
"""


def test_parses_instructions_control_words_lines_and_loops():
    functions = sass_reading.parse_disassembly(DISASSEMBLY)
    code = functions["_Z6kernelv"]["code"]
    assert [i.opcode for i in code] == ["LDG.E.128", "FSET.BF.LT.AND", "BRA"]
    assert code[0].width_bits == 128 and code[0].write_barrier == 2 and code[0].klass == "global load"
    assert code[1].wait_mask == 0b100 and code[1].lines == (("x.hpp", 12), ("k.cu", 40))
    assert code[2].predicate == "@P0" and code[2].klass == "control"
    assert sass_reading.loops(functions["_Z6kernelv"]) == [(1, 2)]
    assert sass_reading.loads_in_flight_bits(code) == 128
    assert sass_reading.load_rounds(code) == 1


def test_control_word_fields():
    # stall 3, yield 0, write scoreboard 5, no read scoreboard (7), waiting on scoreboards 1 and 4
    control = (3 << 41) | (5 << 46) | (7 << 49) | (0b10010 << 52)
    instruction = sass_reading.Instruction(0, "FADD R1, R2, R3", control, ())
    assert instruction.stall == 3 and instruction.write_barrier == 5 and instruction.wait_mask == 0b10010
    assert sass_reading.Instruction(0, "NOP", 7 << 46, ()).write_barrier is None


def run_report(tmp_path, result, benchmarks=None, check=False):
    report = tmp_path / "report.json"
    report.write_text(json.dumps({"kernels": {"similarity fused, int32 counts": result}}))
    command = [sys.executable, SCRIPT, "--report", str(report), "--kernel", "fused, int32 counts"]
    if benchmarks is not None:
        (tmp_path / "bench_similarity_large_device.json").write_text(json.dumps({"benchmarks": benchmarks}))
        command += ["--measured", str(tmp_path)]
    if check:
        command.append("--check")
    return subprocess.run(command, capture_output=True, text=True)


WITHIN = {"instructions per element": 3.2, "local accesses between first and last compare": 0, "vector stores": 16,
          "floor elements/s (H100)": "1.12e+13", "predicted fraction of floor": 0.93}


def test_budgets_pass_and_fail(tmp_path):
    assert run_report(tmp_path, WITHIN, check=True).returncode == 0
    over = dict(WITHIN, **{"instructions per element": 3.3, "vector stores": 0})
    result = run_report(tmp_path, over, check=True)
    assert result.returncode == 1
    assert "instructions per element = 3.3, budget max 3.25" in result.stdout
    assert "vector stores = 0, budget min 1" in result.stdout


def test_measured_beside_predicted(tmp_path):
    benchmarks = [
        {"name": "similarity/fused-plain/cuda/samples:256/n:16384/m:16384/tile:4096/count/device_median",
         "aggregate_name": "median", "floor_fraction": 0.81},
        {"name": "similarity/fused-plain/cuda/samples:256/n:16384/m:16384/tile:4096/count/device_mean",
         "aggregate_name": "mean", "floor_fraction": 0.5},
        # y = x: half the pairs computed, all counted, so its fraction is not the kernel's
        {"name": "similarity/fused/cuda/samples:256/n:16384/m:16384/tile:4096/count/device_median",
         "aggregate_name": "median", "floor_fraction": 1.28},
    ]
    out = run_report(tmp_path, WITHIN, benchmarks).stdout
    assert "measured: 0.810 of the floor measured (floor_fraction 0.81" in out and "0.93 predicted" in out
    missing = run_report(tmp_path, WITHIN, []).stdout
    assert "not measured (no median of floor_fraction" in missing


def test_a_benchmark_cut_short_is_not_measured(tmp_path):
    run_report(tmp_path, WITHIN, [])
    (tmp_path / "bench_similarity_large_device.json").write_text('{"benchmarks": [{"name": "simil')
    command = [sys.executable, SCRIPT, "--report", str(tmp_path / "report.json"), "--kernel", "int32 counts",
               "--measured", str(tmp_path)]
    result = subprocess.run(command, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "is not whole JSON: its benchmark was cut short" in result.stdout


def test_measured_multiple_of_the_other_kernel(tmp_path):
    # The sorted kernel's and the fused one's median times at the same problem (2026-11-28's H200:
    # 12.9 against 8.35 ms, y a copy); y = x rows and means are not the problem's.
    def bench(name, ms, aggregate="median"):
        return {"name": f"similarity/{name}/cuda/samples:256/n:16384/m:16384/tile:4096/count/device/manual_time_"
                        f"{aggregate}", "aggregate_name": aggregate, "real_time": ms * 1e6, "time_unit": "ns"}
    (tmp_path / "report.json").write_text(json.dumps({"kernels": {"similarity sorted, int32 counts": {}}}))
    (tmp_path / "bench_similarity_large_sorted.json").write_text(json.dumps(
        {"benchmarks": [bench("sorted", 12.8), bench("sorted-plain", 12.9), bench("sorted-plain", 20.0, "mean")]}))
    command = [sys.executable, SCRIPT, "--report", str(tmp_path / "report.json"), "--kernel", "sorted, int32 counts",
               "--measured", str(tmp_path)]
    missing = subprocess.run(command, capture_output=True, text=True).stdout
    assert "measured x the other kernel: not measured (bench_similarity_large_device.json is not in" in missing
    (tmp_path / "bench_similarity_large_device.json").write_text(json.dumps(
        {"benchmarks": [bench("fused", 4.71), bench("fused-plain", 8.35)]}))
    out = subprocess.run(command, capture_output=True, text=True).stdout
    assert "measured x the other kernel: 0.65 (12.9 ms against 8.35 ms)" in out


@pytest.mark.skipif(not os.path.isdir(os.path.join(ROOT, "build", "kernels", "CMakeFiles", "hpcml.dir", "similarity")),
                    reason="no CUDA build in ./build to read (ctest's sass_budgets reads the build it belongs to)")
def test_every_kernel_of_the_table_is_found_in_the_build():
    result = subprocess.run([sys.executable, SCRIPT, "--objects",
                             os.path.join(ROOT, "build", "kernels", "CMakeFiles", "hpcml.dir")],
                            capture_output=True, text=True)
    if "not found (pip install" in result.stderr + result.stdout:
        pytest.skip(result.stderr.strip())
    assert result.returncode == 0, result.stderr
    assert "error" not in result.stdout
