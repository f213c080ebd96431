"""The backends the family tests run on. Every test of a computation both backends provide is
parameterised over BACKENDS; its CUDA instance skips, saying why, where no usable device exists
(as the C++ suites' HPCML_SKIP_UNLESS_AVAILABLE). Tests of CUDA arrays take @needs_cuda."""

import pytest

import hpcml

NO_CUDA = "no usable CUDA device: " + hpcml.cuda_status()["message"].split(". ")[0]  # its first sentence says why
needs_cuda = pytest.mark.skipif("cuda" not in hpcml.backends(), reason=NO_CUDA)
BACKENDS = ["cpu", pytest.param("cuda", marks=needs_cuda)]
