"""The backends the family tests run on. Every test of a computation both backends provide is
parameterised over BACKENDS; its CUDA instance skips, saying why, where no usable device exists
(as the C++ suites' HPCML_SKIP_UNLESS_AVAILABLE). Tests of CUDA arrays take @needs_cuda. Both carry
the `cuda` marker (conftest.py), by which the GPU suite selects the GPU cases."""

import pytest

import hpcml

NO_CUDA = "no usable CUDA device: " + hpcml.cuda_status()["message"].split(". ")[0]  # its first sentence says why
_skip_without_cuda = pytest.mark.skipif("cuda" not in hpcml.backends(), reason=NO_CUDA)


def needs_cuda(test):
    return pytest.mark.cuda(_skip_without_cuda(test))


BACKENDS = ["cpu", pytest.param("cuda", marks=[pytest.mark.cuda, _skip_without_cuda])]

# The CPU's instruction sets here, best first: hpcml.cpu_kernel() and each lesser one, which the
# environment variable HPCML_CPU_KERNEL selects (read at each call, so monkeypatch.setenv works).
LEVELS = hpcml.cpu_kernel_names()
CPU_KERNELS = LEVELS[LEVELS.index(hpcml.cpu_kernel()):]
