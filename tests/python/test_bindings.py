"""hpcml._hpcml's calls take their options by name (issue: options cross into C++ by name): no
bound function takes more than 8 parameters (keyword options count as one), a name a call does
not know is refused naming it, and a value of the wrong type names its option."""

import ast
import os

import numpy as np
import pytest

import hpcml
from hpcml import _hpcml

X = np.ones((3, 10), np.float32)
OPTIONS = dict(threshold=1.0, mode="count", tile=None, backend="cpu", method="auto", device=0)


def test_no_bound_function_takes_more_than_8_parameters():
    stub = os.path.join(os.path.dirname(_hpcml.__file__), "_hpcml.pyi")
    tree = ast.parse(open(stub, encoding="utf-8").read())
    counted = 0
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            a = node.args
            names = [p.arg for p in a.posonlyargs + a.args + a.kwonlyargs if p.arg != "self"]
            total = len(names) + (a.vararg is not None) + (a.kwarg is not None)
            assert total <= 8, f"{node.name} takes {total} parameters: {names}"
            counted += 1
    assert counted > 20  # the stub was read


@pytest.mark.parametrize("call", [
    lambda **o: _hpcml._similarity(X, None, np.empty((10, 10), np.int32), False, **o),
    lambda **o: _hpcml._similarity_pairs(X, None, False, min_count=1, **o),
])
def test_an_unknown_option_is_refused_naming_it(call):
    call(**OPTIONS)  # the options as hpcml/_similarity.py passes them
    with pytest.raises(ValueError, match="^treshold: not an option of this call"):
        call(**OPTIONS, treshold=2.0)
    with pytest.raises(TypeError, match="^threshold: an option of the wrong type"):
        call(**{**OPTIONS, "threshold": "1"})


def test_every_family_refuses_an_unknown_option():
    A = np.zeros((1, 3, 3), np.float32)
    regret = dict(iterations=5, variant="rm", alternating=False, averaging="uniform", sampled=False, seed=0,
                  first_game=0, backend="cpu", method="fused", device=0)
    _hpcml._solve_matrix_games(A, **regret)
    with pytest.raises(ValueError, match="^iteration: not an option"):
        _hpcml._solve_matrix_games(A, **regret, iteration=5)
    v = np.array([0.5, 1.0])
    with pytest.raises(ValueError, match="^seed: not an option"):
        _hpcml._ig_evaluate("pdf", v, v, v, np.empty(2), False, backend="cpu", device=0, seed=1)
    with pytest.raises(ValueError, match="^grid: not an option"):
        _hpcml._ig_distance(v, v, metric="tv", lo=-1.0, hi=1.0, points=11, method="fused", backend="cpu", device=0,
                            grid=3)
    assert hpcml.similarity(X).shape == (10, 10)  # the public call still works
