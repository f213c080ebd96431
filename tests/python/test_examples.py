"""Every example in examples/ runs: the seed program beside its hpcml version, checked to agree
(the inverse-Gaussian figure always; the device query where nvcc and hpcml-devicequery are
built; the GPU trace through the fake NVML the C++ tests build, for pyNVML and hpcml-trace alike)."""

import importlib.util
import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
BIN = os.environ.get("HPCML_BIN_DIR", os.path.join(ROOT, "build", "bin"))


def example(name, *args, env=None):
    return subprocess.run([sys.executable, os.path.join(ROOT, "examples", name, "run.py"), *args],
                          capture_output=True, text=True, env=env, timeout=600)


def test_invgauss_figure(tmp_path):
    result = example("invgauss", "--rounds", "1", "--output", str(tmp_path / "figure.png"), "--backend", "cpu")
    assert result.returncode == 0, result.stderr
    assert "agree" in result.stdout and "x the seed" in result.stdout
    assert (tmp_path / "figure.png").stat().st_size > 10_000


def test_device_query():
    tool = os.path.join(BIN, "hpcml-devicequery")
    if not os.path.exists(tool) or not shutil.which("nvcc"):
        pytest.skip("needs nvcc and hpcml-devicequery (a CUDA build)")
    result = example("devicequery", "--tool", tool)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "nothing to compare" in result.stdout or "every device agrees" in result.stdout


def test_gpu_trace_through_the_fake_nvml(tmp_path):
    fake, tool = os.environ.get("HPCML_FAKE_NVML"), os.path.join(BIN, "hpcml-trace")
    if not fake or not os.path.exists(tool):
        pytest.skip("needs the fake NVML and hpcml-trace of a build with NVML (HPCML_FAKE_NVML, HPCML_BIN_DIR)")
    for module in ("pynvml", "pandas"):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"the seed's trace needs {module} (scripts/install-deps.sh installs it)")
    libs = tmp_path / "lib"
    libs.mkdir()
    (libs / "libnvidia-ml.so.1").symlink_to(fake)  # the name pyNVML loads
    env = dict(os.environ, LD_LIBRARY_PATH=str(libs), HPCML_NVML_LIBRARY=fake)
    result = example("trace", "--tool", tool, "--workload", "sleep 1", "--out-dir", str(tmp_path), env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    medians = [line.split() for line in result.stdout.splitlines() if line.startswith(("Temperature", "Power"))]
    # The fake's readings in both traces; power: the seed's 1 s average (200 W) against hpcml's
    # instantaneous reading (205 W) of a 400 W limit.
    assert medians and all(row[-1] == row[-2] for row in medians if row[0] != "Power")
    assert [row[-2:] for row in medians if row[0] == "Power"] == [["50.00", "51.25"]]
    assert (tmp_path / "seed.png").exists() and (tmp_path / "hpcml.png").exists()


def test_regret_matching_beside_the_seeds_torch_program():
    pytest.importorskip("torch", reason="the seed's program is PyTorch (.ci/run installs torch)")
    result = example("regret", "--device", "cpu", "--iterations", "20", "--rounds", "1")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "agree" in result.stdout and "hpcml prm+" in result.stdout


def test_similarity_beside_the_seeds_compiled_program():
    pytest.importorskip("torch", reason="the seed's program is PyTorch (.ci/run installs torch)")
    result = example("similarity", "--device", "cpu", "--samples", "16", "--features", "1200", "--rounds", "1")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "are equal" in result.stdout and "x the seed" in result.stdout
    assert "hpcml.similarity into a host tensor made once" in result.stdout
