"""hpcml._hpcml's calls take their options by name: no
bound function takes more than 8 parameters (keyword options count as one), a name a call does
not know is refused naming it, and a value of the wrong type names its option."""

import numpy as np
import pytest

import hpcml
from hpcml import _hpcml

X = np.ones((3, 10), np.float32)
OPTIONS = dict(threshold=1.0, mode="count", tile=None, backend="cpu", method="auto", device=0)


def _parameters(signature):
    """The parameters of a nanobind signature ("def f(a: T[x, y], *, b: U = 1, **options) -> R"),
    split at the commas outside brackets, without self and the bare / and * markers."""
    inside = signature[signature.index("(") + 1:]
    depth, current, names = 0, "", []
    for c in inside:
        if depth == 0 and c == ")":
            break
        depth += c in "([{"
        depth -= c in ")]}"
        if depth == 0 and c == ",":
            names.append(current.strip())
            current = ""
        else:
            current += c
    names.append(current.strip())
    return [n for n in names if n and n not in ("self", "/", "*")]


def _bound_functions():
    for name in dir(_hpcml):
        value = getattr(_hpcml, name)
        yield name, value
        if isinstance(value, type):
            for member in vars(value).values():
                yield f"{name}.{getattr(member, '__name__', '?')}", member


def test_no_bound_function_takes_more_than_8_parameters():
    counted = 0
    for name, function in _bound_functions():
        for overload in getattr(function, "__nb_signature__", ()):
            names = _parameters(overload[0])
            assert len(names) <= 8, f"{name} takes {len(names)} parameters: {names}"
            counted += 1
    assert counted > 20  # the module's signatures were read
    assert _parameters(_hpcml._similarity.__nb_signature__[0][0])[-1] == "**options"


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
    # A required option misspelt: named as missing, with the misspelling beside it.
    misspelt = {("treshold" if k == "threshold" else k): v for k, v in OPTIONS.items()}
    with pytest.raises(ValueError, match="^threshold: a required option is missing .*given and not yet read: .*treshold"):
        call(**misspelt)


def test_every_family_refuses_an_unknown_option():
    A = np.zeros((1, 3, 3), np.float32)
    regret = dict(iterations=5, variant="rm", alternating=False, averaging="uniform", sampled=False, seed=0,
                  first_game=0, backend="cpu", method="fused", device=0)
    _hpcml._solve_matrix_games(A, **regret)
    with pytest.raises(ValueError, match="^iteration: not an option"):
        _hpcml._solve_matrix_games(A, **regret, iteration=5)
    # Every binding reads the execution options; one the call cannot honour is refused by the
    # library's dispatch, by name, never ignored.
    with pytest.raises(ValueError, match="^stream: solve_matrix_games does not queue its work"):
        _hpcml._solve_matrix_games(A, **regret, stream=1234)
    v = np.array([0.5, 1.0])
    with pytest.raises(ValueError, match="^seed: not an option"):
        _hpcml._ig_evaluate("pdf", v, v, v, np.empty(2), False, backend="cpu", device=0, seed=1)
    with pytest.raises(ValueError, match="^progress: evaluate does not report progress"):
        _hpcml._ig_evaluate("pdf", v, v, v, np.empty(2), False, backend="cpu", device=0, progress=print)
    with pytest.raises(ValueError, match="^grid: not an option"):
        _hpcml._ig_distance(v, v, metric="tv", lo=-1.0, hi=1.0, points=11, method="fused", backend="cpu", device=0,
                            grid=3)
    assert hpcml.similarity(X).shape == (10, 10)  # the public call still works
