"""The `cuda` marker: a test that does GPU work where a usable device exists (it may also run, or
skip saying why, elsewhere). The GPU suite's first call runs only these (`pytest -m cuda`); CI runs
every test on every commit."""


def pytest_configure(config):
    config.addinivalue_line("markers", "cuda: does GPU work where a usable CUDA device exists (pytest -m cuda)")
