"""An installed hpcml as a user gets it: one call of each family against NumPy.

Run from outside the source tree, by scripts/test-wheel.sh (a built wheel) and
scripts/pip-install-check.sh (`pip install ./python` in a fresh environment).
"""

import numpy as np

import hpcml

rng = np.random.default_rng()

# Similarity: float32 NumPy's broadcast, bit for bit.
x = rng.standard_normal((37, 300)).astype(np.float32)
y = rng.standard_normal((37, 250)).astype(np.float32)
expected = (np.abs(x[:, :, None] - y[:, None, :]) < 1).sum(axis=0, dtype=np.int32)
assert np.array_equal(hpcml.similarity(x, y), expected), "hpcml.similarity differs from NumPy"

# Regret matching on rock-paper-scissors (value 0): the reported value and exact Nash gap are what
# NumPy computes from the returned strategies, and the gap is small.
A = np.array([[0.0, -1.0, 1.0], [1.0, 0.0, -1.0], [-1.0, 1.0, 0.0]])
game = hpcml.solve_matrix_game(A, iterations=2000)
x_bar, y_bar = game.row_strategy, game.col_strategy
assert abs(game.value - x_bar @ A @ y_bar) < 1e-9, "regret: value differs from NumPy's"
assert abs(game.gap - ((A @ y_bar).max() - (x_bar @ A).min())) < 1e-9, "regret: gap differs from NumPy's"
assert game.gap < 1e-2, f"regret: gap {game.gap} after 2000 iterations"

# The inverse-Gaussian density against its formula, where the formula is well conditioned.
t = np.linspace(0.05, 5.0, 200)
mu, lam = 1.3, 2.1
formula = np.sqrt(lam / (2 * np.pi * t**3)) * np.exp(-lam * (t - mu) ** 2 / (2 * mu**2 * t))
assert np.allclose(hpcml.invgauss.pdf(t, mu, lam), formula, rtol=1e-12, atol=0), "invgauss.pdf differs"

print(f"hpcml {hpcml.__version__}: similarity, regret and invgauss agree with NumPy; backends {hpcml.backends()}")
