"""progress= on the long calls: a callable (done, total) on the calling thread, a bar for True,
nothing on short calls, the callback's exception raised after the work, bad arguments refused."""

import sys
import threading

import numpy as np
import pytest

import hpcml


def record():
    calls, threads = [], set()

    def callback(done, total):
        calls.append((done, total))
        threads.add(threading.get_ident())
    return calls, threads, callback


def check(calls, threads, total, at_least=1):
    assert len(calls) >= at_least
    if calls:
        assert threads == {threading.get_ident()}
        assert all(t == total for _, t in calls)
        assert all(a[0] < b[0] for a, b in zip(calls, calls[1:]))
        assert calls[-1][0] == total


@pytest.mark.parametrize("y_is_x", [True, False])
@pytest.mark.parametrize("tile", [None, 96])
def test_similarity_reports_output_elements(y_is_x, tile):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((6, 333)).astype(np.float32)
    y = None if y_is_x else rng.standard_normal((6, 170)).astype(np.float32)
    calls, threads, callback = record()
    S = hpcml.similarity(x, y, tile=tile, backend="cpu", progress=callback, progress_interval=0)
    np.testing.assert_array_equal(S, hpcml.similarity(x, y, tile=tile, backend="cpu"))
    check(calls, threads, S.size, at_least=0)  # the worker threads may do every unit


def test_pairs_and_games_report_their_totals():
    x = np.random.default_rng(1).standard_normal((4, 500)).astype(np.float32)
    calls, threads, callback = record()
    hpcml.similarity_pairs(x, backend="cpu", tile=100, progress=callback, progress_interval=0)
    check(calls, threads, 500 * 500, at_least=0)
    A = np.random.default_rng(2).standard_normal((300, 120)).astype(np.float32)
    calls, threads, callback = record()
    hpcml.solve_matrix_game(A, iterations=25, backend="cpu", progress=callback, progress_interval=0)
    check(calls, threads, 25, at_least=25)  # one game's iterations run on the calling thread


def test_short_calls_never_call_back():
    calls, _, callback = record()
    hpcml.similarity(np.ones((3, 40), np.float32), backend="cpu", progress=callback)
    assert calls == []


def test_a_raising_callback_is_raised_after_the_work():
    A = np.random.default_rng(3).standard_normal((200, 100)).astype(np.float32)

    def stop(done, total):
        raise KeyboardInterrupt  # what Ctrl-C in a callback looks like

    with pytest.raises(KeyboardInterrupt):
        hpcml.solve_matrix_game(A, iterations=10, backend="cpu", progress=stop, progress_interval=0)


def test_progress_true_draws_a_bar_without_tqdm(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "tqdm", None)  # import tqdm fails
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)
    A = np.random.default_rng(4).standard_normal((200, 100)).astype(np.float32)
    hpcml.solve_matrix_game(A, iterations=20, backend="cpu", progress=True, progress_interval=0)
    err = capsys.readouterr().err
    assert "hpcml.solve_matrix_games:" in err and "100.0% of 20 game-iterations" in err
    assert err.endswith("\n")


def test_bad_progress_arguments_are_refused():
    x = np.ones((3, 10), np.float32)
    with pytest.raises(TypeError, match="progress"):
        hpcml.similarity(x, progress="yes")
    for soon in ["soon", "3", None]:  # a string is not a number of seconds, even "3"
        with pytest.raises(ValueError, match="^progress_interval: expected a real number"):
            hpcml.similarity(x, progress=True, progress_interval=soon)
    with pytest.raises(ValueError, match="progress_interval"):
        hpcml.similarity(x, progress=True, progress_interval=-1)


def test_progress_true_uses_tqdm_where_installed(monkeypatch):
    bars = []

    class FakeTqdm:  # the part of tqdm's API the bar uses
        def __init__(self, total, desc, unit, unit_scale):
            self.total, self.desc, self.unit, self.n, self.closed = total, desc, unit, 0, False
            bars.append(self)

        def update(self, count):
            self.n += count

        def close(self):
            self.closed = True

    module = type(sys)("tqdm.auto")
    module.tqdm = FakeTqdm
    monkeypatch.setitem(sys.modules, "tqdm", type(sys)("tqdm"))
    monkeypatch.setitem(sys.modules, "tqdm.auto", module)
    A = np.random.default_rng(5).standard_normal((200, 100)).astype(np.float32)
    hpcml.solve_matrix_game(A, iterations=15, backend="cpu", progress=True, progress_interval=0)
    assert len(bars) == 1
    assert (bars[0].total, bars[0].n, bars[0].closed, bars[0].unit) == (15, 15, True, "game-iterations")


@pytest.mark.parametrize("same_buffer", [False, True])
def test_pair_list_of_y_equal_x_ends_at_its_total(same_buffer):
    # The sorted method on more than one pair tile (auto picks it at this shape): its mirrored
    # tiles were counted where written only, and the pair list writes none (a RuntimeError).
    x = np.random.default_rng(3).standard_normal((16, 5000)).astype(np.float32)
    calls = []
    i, j = hpcml.similarity_pairs(x, x if same_buffer else None, backend="cpu",
                                  progress=lambda d, t: calls.append((d, t)), progress_interval=0.0)
    assert calls and calls[-1] == (5000 * 5000, 5000 * 5000)
    assert len(i) == np.count_nonzero(hpcml.similarity(x, mode="all", backend="cpu"))
