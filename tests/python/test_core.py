import json
import re

import numpy as np
import pytest

import hpcml


def test_version_is_semver():
    assert re.fullmatch(r"\d+\.\d+\.\d+", hpcml.__version__)


def test_backends_start_with_cpu():
    backends = hpcml.backends()
    assert backends[0] == "cpu"
    assert set(backends) <= {"cpu", "cuda"}


@pytest.mark.cuda  # on a GPU machine, the GPU side
def test_devices_agree_with_status():
    status = hpcml.cuda_status()
    devices = hpcml.devices()
    assert isinstance(devices, list)
    json.dumps(devices)  # plain Python values only
    assert devices == [d for d in status["devices"] if d["usable"]]
    assert all(d["usable"] == (d["unusable_reason"] == "") for d in status["devices"])
    assert (status["cuda_architectures"] != "") == status["compiled"]
    if status["status"] == "ok":
        assert devices and all(d["multiprocessors"] > 0 for d in devices)
        assert "cuda" in hpcml.backends()
    else:
        assert devices == []
        assert status["message"]
        assert "cuda" not in hpcml.backends()


@pytest.mark.cuda  # on a GPU machine, the GPU side
def test_release_cached_memory_is_always_callable():
    hpcml.release_cached_memory()  # a no-op where nothing is cached or there is no GPU
    if "cuda" in hpcml.backends():
        x = np.random.default_rng(0).standard_normal((16, 300)).astype(np.float32)
        before = hpcml.similarity(x, backend="cuda")
        hpcml.release_cached_memory()
        np.testing.assert_array_equal(hpcml.similarity(x, backend="cuda"), before)


def test_auto_resolves_to_a_concrete_backend():
    expected = "cuda" if "cuda" in hpcml.backends() else "cpu"
    assert hpcml.resolve_backend("auto") == expected
    assert hpcml.resolve_backend("cpu") == "cpu"


@pytest.mark.cuda  # on a GPU machine, the GPU side
def test_errors_map_to_python_exceptions():
    with pytest.raises(ValueError, match="expected auto, cpu or cuda"):
        hpcml.resolve_backend("gpu")
    if "cuda" not in hpcml.backends():
        with pytest.raises(RuntimeError, match="backend cuda requested"):
            hpcml.resolve_backend("cuda")
    else:
        with pytest.raises(ValueError, match="out of range"):
            hpcml.resolve_backend("cuda", device=1 << 20)
