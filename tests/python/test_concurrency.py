"""Python threads calling hpcml at once: each gets its own right answer, and the GIL is released
while the library computes (other Python threads run meanwhile)."""

import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

import hpcml
from hpcml import invgauss


def test_threads_calling_every_family_at_once_get_their_own_answers():
    rng = np.random.default_rng(5)
    xs = [rng.standard_normal((32, 90)).astype(np.float32) for _ in range(6)]
    games = [rng.standard_normal((12, 9)) for _ in range(6)]
    points = [rng.uniform(0.1, 5, 1000) for _ in range(6)]
    serial = [(hpcml.similarity(x, backend="cpu"), hpcml.solve_matrix_game(g, iterations=300, backend="cpu").value,
               invgauss.cdf(p, 1.5, 2.0, backend="cpu")) for x, g, p in zip(xs, games, points)]

    def work(k):
        return (hpcml.similarity(xs[k], backend="cpu"), hpcml.solve_matrix_game(games[k], iterations=300, backend="cpu").value,
                invgauss.cdf(points[k], 1.5, 2.0, backend="cpu"))

    with ThreadPoolExecutor(6) as pool:
        for _ in range(3):
            for (s, v, c), (s0, v0, c0) in zip(pool.map(work, range(6)), serial):
                np.testing.assert_array_equal(s, s0)
                assert v == v0
                np.testing.assert_array_equal(c, c0)


def test_the_gil_is_released_during_a_call():
    x = np.random.default_rng(6).standard_normal((256, 3000)).astype(np.float32)
    y = x.copy()  # all pairs computed (y = x would use the symmetry and halve the call)
    running = threading.Event()
    done = threading.Event()

    def call():
        running.set()
        hpcml.similarity(x, y, backend="cpu")
        done.set()

    worker = threading.Thread(target=call)
    worker.start()
    running.wait()
    spins = 0
    while not done.is_set():  # pure Python: runs only while the worker does not hold the GIL
        spins += 1
    worker.join()
    # A call holding the GIL would leave this thread a few switch intervals at most.
    assert spins > 100_000, spins
