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
            hpcml.telemetry.trace(strict=True)


_TRACE_WITHOUT_GPU = """
import json, sys, time
import hpcml
with hpcml.telemetry.trace() as t:  # the README's tour, on any machine
    time.sleep(0.05)
try:
    t.write_emissions(sys.argv[1], carbon_intensity=100.0)
    row = "written"
except ValueError as e:
    row = str(e)
print(json.dumps(dict(summary=t.summary, samples=len(t.samples), status=hpcml.telemetry.status(), row=row)))
"""


def test_without_gpu_telemetry_a_trace_records_time_and_says_why(tmp_path):
    # In a process of its own: NVML is loaded once per process.
    env = dict(os.environ, HPCML_NVML_LIBRARY="/nonexistent/libnvidia-ml.so.1",
               HPCML_POWERCAP_ROOT=str(tmp_path / "no-powercap"))
    p = subprocess.run([sys.executable, "-c", _TRACE_WITHOUT_GPU, str(tmp_path / "e.csv")], env=env,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    import json
    got = json.loads(p.stdout)
    summary = got["summary"]
    assert got["status"]["status"] != "ok" and got["samples"] == 0
    assert summary["duration_s"] >= 0.04 and summary["energy_j"] is None and summary["cpu_energy_j"] is None
    assert summary["gpu_telemetry"] == "not measured: " + got["status"]["message"]
    assert "powercap" in summary["cpu_energy"]
    assert got["row"].startswith("no energy was measured") and not (tmp_path / "e.csv").exists()
    for bad in ["yes", 1, None]:
        with pytest.raises(ValueError, match="strict"):
            hpcml.telemetry.trace(strict=bad)


def test_write_emissions_says_why_a_file_cannot_be_written(tmp_path):
    with pytest.raises(FileNotFoundError, match="missing"):
        hpcml.telemetry.write_emissions(tmp_path / "missing" / "e.csv", 1.0, cpu_energy_j=5.0)
    with pytest.raises(ValueError, match="carbon"):
        hpcml.telemetry.write_emissions(tmp_path / "e.csv", 1.0, cpu_energy_j=5.0, carbon_intensity=-1.0)
    assert not (tmp_path / "e.csv").exists()


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
    for other in ("intel-rapl-mmio:0", "intel-rapl:1:0:0", "intel-rapl:", "intel-rapl:x"):  # not zones
        _zone(tmp_path, other, "package-0", 100)
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


# ---- emissions: a row CodeCarbon's tooling reads ----

def test_emissions_rows_match_the_ones_codecarbon_writes(tmp_path, monkeypatch):
    # CodeCarbon (scripts/install-deps.sh installs 3.3) writes a row offline; hpcml's row must have
    # its header, and both rows the same units: kWh that add up, kg CO2e and kg/s that agree with
    # them, the machine's RAM in the same unit.
    codecarbon = pytest.importorskip("codecarbon", reason="codecarbon is not installed (scripts/install-deps.sh)")
    import csv

    monkeypatch.delenv("HPCML_CARBON_INTENSITY", raising=False)
    tracker = codecarbon.OfflineEmissionsTracker(country_iso_code="FRA", output_dir=str(tmp_path), log_level="error",
                                                 output_methods=[codecarbon.OutputMethod.CSV])
    tracker.start()
    time.sleep(0.5)
    tracker.stop()
    theirs_path = tmp_path / "emissions.csv"
    ours_path = tmp_path / "hpcml.csv"
    used = hpcml.telemetry.write_emissions(ours_path, 1800.0, cpu_energy_j=3.6e6, gpu_energy_j=1.8e6)
    assert used["world_average"] and used["emissions_kg"] == pytest.approx(1.5 * 0.475)
    hpcml.telemetry.write_emissions(ours_path, 10.0, gpu_energy_j=36e3, carbon_intensity=56)
    theirs = list(csv.DictReader(theirs_path.open()))
    ours = list(csv.DictReader(ours_path.open()))
    assert theirs_path.open().readline() == ours_path.open().readline()  # the same columns, in order
    assert len(theirs) == 1 and len(ours) == 2
    for row in theirs + ours:
        kwh = [float(row[k]) for k in ("cpu_energy", "gpu_energy", "ram_energy")]
        assert float(row["energy_consumed"]) == pytest.approx(sum(kwh), rel=1e-9, abs=1e-15)
        assert float(row["emissions_rate"]) == pytest.approx(float(row["emissions"]) / float(row["duration"]), rel=1e-6)
        kg_per_kwh = float(row["emissions"]) / float(row["energy_consumed"])
        assert 0 < kg_per_kwh < 1.5, row  # kg CO2e per kWh: a grid's intensity, not grams
        assert float(row["ram_total_size"]) == pytest.approx(float(theirs[0]["ram_total_size"]), rel=0.02)  # GB
        assert row["cpu_count"] == theirs[0]["cpu_count"]
    assert float(ours[0]["emissions"]) / float(ours[0]["energy_consumed"]) == pytest.approx(0.475)
    assert "world average" in ours[0]["country_name"] and ours[1]["country_name"].startswith("56 gCO2e/kWh")
    assert float(ours[1]["gpu_power"]) == pytest.approx(3600.0)  # W: 36 kJ over 10 s
    with pytest.raises(ValueError, match="HPCML_CARBON_INTENSITY"):
        monkeypatch.setenv("HPCML_CARBON_INTENSITY", "lots")
        hpcml.telemetry.carbon_intensity()
