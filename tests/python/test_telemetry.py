import os
import pathlib
import subprocess
import sys

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
        "assert (t.samples['power_w'] == 200).all() and t.samples['energy_j'][-1] > 0\n"
    )
    env = dict(os.environ, HPCML_NVML_LIBRARY=os.environ["HPCML_FAKE_NVML"], HPCML_QUIET="1")
    subprocess.run([sys.executable, "-c", code], check=True, env=env)
