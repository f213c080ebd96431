import os
import pathlib
import subprocess
import sys
import time

import numpy as np
import pytest

import hpcml

DATA = pathlib.Path(__file__).parents[1] / "data" / "telemetry"


def test_status_is_a_dict_with_a_reason():
    st = hpcml.telemetry.status()
    assert st["status"] in {"ok", "not_compiled", "no_library", "no_device", "error"}
    if st["status"] != "ok":
        assert st["message"]
        with pytest.raises(RuntimeError, match=st["message"][:30]):
            hpcml.telemetry.trace()


def test_a_cuda_build_has_telemetry():
    # A CUDA build whose nvml.h was not found would trace nothing on a GPU, and say so only there.
    if not hpcml.cuda_status()["compiled"]:
        pytest.skip("a CPU-only build: GPU telemetry may be left out")
    assert hpcml.telemetry.status()["status"] != "not_compiled", hpcml.telemetry.status()["message"]


def test_plot_draws_the_seed_figure(tmp_path):
    out = tmp_path / "trace.png"
    hpcml.telemetry.plot(DATA / "trace.seed.csv", out)
    assert out.stat().st_size > 10000
    with pytest.raises(ValueError, match="seed's format"):
        hpcml.telemetry.plot(DATA / "trace.csv", tmp_path / "x.png")


def test_bad_interval():
    with pytest.raises(ValueError, match="interval_ms"):
        hpcml.telemetry.trace(interval_ms=0)


@pytest.mark.skipif(not os.environ.get("HPCML_FAKE_NVML"), reason="HPCML_FAKE_NVML (the test build's fake NVML) not set")
def test_trace_with_the_fake_nvml():
    code = (
        "import time, hpcml\n"
        "with hpcml.telemetry.trace(interval_ms=20) as t:\n"
        "    time.sleep(0.3)\n"
        "assert t.device_name == 'Fake GPU', t.device_name\n"
        "assert t.summary['samples'] >= 8 and abs(t.summary['mean_power_w'] - 200) < 20, t.summary\n"
        "assert (t.samples['power_w'] == 205).all() and t.summary['power_instant'] and t.samples['energy_j'][-1] > 0\n"
    )
    env = dict(os.environ, HPCML_NVML_LIBRARY=os.environ["HPCML_FAKE_NVML"], HPCML_QUIET="1")
    subprocess.run([sys.executable, "-c", code], check=True, env=env)


# ---- CPU energy (powercap): a fake tree, since no machine here has the interface ----

def _zone(root, zone, name, energy_uj, range_uj=10**12):
    folder = root / zone
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "name").write_text(name + "\n")
    (folder / "max_energy_range_uj").write_text(f"{range_uj}\n")
    (folder / "energy_uj").write_text(f"{energy_uj}\n")


def test_cpu_energy_sums_package_and_dram_of_a_fake_tree(tmp_path, monkeypatch):
    monkeypatch.setenv("HPCML_POWERCAP_ROOT", str(tmp_path))
    _zone(tmp_path, "intel-rapl:0", "package-0", 100)
    _zone(tmp_path, "intel-rapl:0:0", "core", 100)
    _zone(tmp_path, "intel-rapl:0:1", "dram", 100)
    status = hpcml.telemetry.cpu_energy_status()
    assert status["available"] and status["domains"] == ["package-0 (intel-rapl:0)", "dram (intel-rapl:0:1)"]
    with hpcml.telemetry.cpu_energy() as e:
        _zone(tmp_path, "intel-rapl:0", "package-0", 2_000_100)
        _zone(tmp_path, "intel-rapl:0:0", "core", 9_000_100)  # inside the package: not added
        _zone(tmp_path, "intel-rapl:0:1", "dram", 1_000_100)
        time.sleep(0.02)
    assert e.energy_j == pytest.approx(3.0) and e.seconds >= 0.01
    assert "package-0" in e.source


def test_without_powercap_every_output_says_why(tmp_path, monkeypatch):
    monkeypatch.setenv("HPCML_POWERCAP_ROOT", str(tmp_path / "absent"))
    with hpcml.telemetry.cpu_energy() as e:
        time.sleep(0.02)
    assert e.energy_j is None and "does not exist" in e.source
    x = np.random.default_rng(0).standard_normal((8, 50)).astype(np.float32)
    _, stats = hpcml.similarity(x, backend="cpu", return_stats=True)
    assert stats["cpu_energy_j"] is None and "does not exist" in stats["cpu_energy"]
    _, stats = hpcml.similarity_pairs(x, backend="cpu", return_stats=True)
    assert stats["cpu_energy_j"] is None and "no CPU energy" in stats["cpu_energy"]


# ---- the energy figure from a bench_* JSON result ----

def _run(name, real_time_ms, peak, energy=None):
    row = {"name": name + "/manual_time", "run_name": name + "/manual_time", "run_type": "iteration",
           "real_time": real_time_ms, "time_unit": "ms", "peak_device_bytes": 0.0, "peak_host_bytes": peak}
    if energy is not None:
        row["energy_per_iteration_J"] = energy
    return row


def test_the_energy_figure_pairs_fused_with_naive_and_says_why_energy_is_missing(tmp_path):
    pytest.importorskip("matplotlib")
    import json

    import hpcml.figures as figures

    results = {"context": {"hpcml_device": "Test CPU", "hpcml_energy": "not measured: no CPU energy: because"},
               "benchmarks": [_run("similarity/fused/cpu/n:10", 2.0, 1e6, 0.5),
                              _run("similarity/fused-plain/cpu/n:10", 3.0, 1e6, 0.7),
                              _run("similarity/naive/cpu/n:10", 300.0, 1e9, 40.0),
                              _run("similarity/naive/cpu/n:20", 500.0, 2e9),  # no fused twin: left out
                              _run("regret/fused/cuda/n:5", 1.0, 1e3),
                              _run("regret/naive/cuda/n:5", 4.0, 1e4)]}
    path = tmp_path / "results.json"
    path.write_text(json.dumps(results))
    pairs = figures.energy(path, tmp_path / "energy.png")
    assert [p["benchmark"] for p in pairs] == ["similarity/cpu/n:10", "regret/cuda/n:5"]
    assert pairs[0]["fused"] == {"seconds": 0.002, "peak_bytes": 1e6, "energy_j": 0.5}
    assert pairs[0]["naive"]["energy_j"] == 40.0 and pairs[1]["naive"]["energy_j"] is None
    assert (tmp_path / "energy.png").stat().st_size > 10000
    result = subprocess.run([sys.executable, "-m", "hpcml.figures", "energy", str(path), str(tmp_path / "cli.png")],
                            capture_output=True, text=True)
    assert result.returncode == 0 and (tmp_path / "cli.png").exists(), result.stderr
    path.write_text(json.dumps({"benchmarks": [_run("similarity/naive/cpu/n:20", 5.0, 2e9)]}))
    with pytest.raises(ValueError, match="no fused and naive runs"):
        figures.energy(path, tmp_path / "none.png")
