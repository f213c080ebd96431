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


# Each optional part without its package: a ModuleNotFoundError naming the extra that brings it
# (run in a fresh interpreter where the package's import is made to fail).
_WITHOUT = """
import sys
sys.modules[sys.argv[1]] = None  # `import NAME` now fails as if NAME were not installed
import hpcml
try:
    exec(sys.argv[2])
except ModuleNotFoundError as e:
    print(e)
"""


@pytest.mark.parametrize("package,code,extra", [
    ("torch", "import hpcml.torch", "hpcml[torch]"),
    ("dask", "import hpcml.dask", "hpcml[dask]"),
    ("matplotlib", "import hpcml.telemetry; hpcml.telemetry.plot('a.csv', 'b.png')", "hpcml[plots]"),
    ("matplotlib", "import hpcml.figures; hpcml.figures.regret_convergence('b.png', iterations=2, random_size=2)",
     "hpcml[plots]"),
])
def test_optional_parts_name_their_extra(package, code, extra):
    import subprocess
    import sys
    p = subprocess.run([sys.executable, "-c", _WITHOUT, package, code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert f"needs {package}, which is not installed: pip install '{extra}'" in p.stdout, p.stdout + p.stderr


def test_figures_command_without_matplotlib_says_so_in_one_line(tmp_path):
    import subprocess
    import sys
    code = "import sys; sys.modules['matplotlib'] = None; sys.argv[0] = 'figures'; import runpy; " \
           "runpy.run_module('hpcml.figures', run_name='__main__')"
    p = subprocess.run([sys.executable, "-c", code, "regret", str(tmp_path / "r.png"), "--iterations", "2",
                        "--size", "2"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 1 and p.stderr.strip().splitlines() == [
        "python -m hpcml.figures: hpcml.figures needs matplotlib, which is not installed: pip install 'hpcml[plots]'"], \
        p.stderr
