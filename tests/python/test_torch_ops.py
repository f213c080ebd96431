"""hpcml.torch: the operators pass torch.library.opcheck (schema, fake tensors, dispatch), trace
into torch.compile(fullgraph=True) graphs without a break, and give hpcml's own results; and
``import hpcml`` alone never imports torch."""

import subprocess
import sys

import numpy as np
import pytest

import hpcml

torch = pytest.importorskip("torch", reason="torch is not installed (CI installs it: .ci/run)")
import hpcml.torch as ht  # noqa: E402


def features(samples, n, seed=0):
    return torch.from_numpy(np.random.default_rng(seed).standard_normal((samples, n)).astype(np.float32) * 0.5)


def test_import_hpcml_does_not_import_torch():
    code = "import sys, hpcml; assert 'torch' not in sys.modules, 'import hpcml imported torch'"
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("args", [
    ("count", "default", 0, False), ("count", "uint8", 16, True), ("all", "bool", 0, False), ("all", "bitmask", 7, True)])
def test_similarity_opcheck_and_values(args):
    mode, dtype, tile, with_y = args
    x, y = features(9, 45), (features(9, 21, seed=1) if with_y else None)
    torch.library.opcheck(torch.ops.hpcml.similarity.default, (x, y, 1.0, mode, dtype, tile))
    got = ht.similarity(x, y, mode=mode, dtype=dtype, tile=tile)
    want = hpcml.similarity(x.numpy(), None if y is None else y.numpy(), mode=mode,
                            dtype=None if dtype == "default" else dtype, tile=tile or None)
    np.testing.assert_array_equal(got.numpy(), want)


@pytest.mark.parametrize("with_y", [False, True])
def test_similarity_host_opcheck_values_and_compile(with_y):
    # host=True: S on the host whatever the inputs' device; on the CPU the same as similarity.
    x, y = features(9, 45), (features(9, 21, seed=1) if with_y else None)
    torch.library.opcheck(torch.ops.hpcml.similarity_host.default, (x, y, 1.0, "all", "bitmask", 0))
    got = ht.similarity(x, y, mode="all", dtype="bool", host=True)
    assert got.device.type == "cpu"
    torch.testing.assert_close(got, ht.similarity(x, y, mode="all", dtype="bool"), rtol=0, atol=0)
    torch._dynamo.reset()
    compiled = torch.compile(lambda x, y: ht.similarity(x, y, host=True).sum(), fullgraph=True)
    assert int(compiled(x, y)) == int(ht.similarity(x, y).sum())
    with pytest.raises(ValueError, match="host: expected True or False"):
        ht.similarity(x, host="yes")


@pytest.mark.parametrize("mode", ["all", "count"])
def test_similarity_pairs_opcheck_and_values(mode):
    x = features(6, 70)
    torch.library.opcheck(torch.ops.hpcml.similarity_pairs.default, (x, None, 1.5, mode, 2, 32))
    got = ht.similarity_pairs(x, threshold=1.5, mode=mode, min_count=2, tile=32)
    want = hpcml.similarity_pairs(x.numpy(), threshold=1.5, mode=mode, min_count=2 if mode == "count" else None, tile=32)
    assert len(got) == len(want)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a.numpy(), b)


@pytest.mark.parametrize("function", hpcml.invgauss.functions())
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_invgauss_opcheck_and_values(function, dtype):
    rng = np.random.default_rng(2)
    x = torch.from_numpy(rng.uniform(0.05, 0.95, (3, 4))).to(dtype)
    mu, lam = torch.tensor([0.5, 1.0, 2.0, 4.0], dtype=dtype), torch.tensor(3.0, dtype=dtype)
    torch.library.opcheck(torch.ops.hpcml.invgauss.default, (function, x, mu, lam))
    got = ht.invgauss(function, x, mu, lam)
    assert got.dtype == dtype and got.shape == (3, 4)
    np.testing.assert_array_equal(got.numpy(), hpcml.invgauss.evaluate(function, x.numpy(), mu.numpy(), lam.numpy()))


def test_invgauss_sample_opcheck_and_values():
    mu, lam = torch.tensor(1.5, dtype=torch.float64), torch.tensor(2.0, dtype=torch.float64)
    torch.library.opcheck(torch.ops.hpcml.invgauss_sample.default, (1000, mu, lam, 7, True))
    np.testing.assert_array_equal(ht.invgauss_sample(1000, 1.5, 2.0, seed=7).numpy(),
                                  hpcml.invgauss.sample(1000, 1.5, 2.0, seed=7))
    assert ht.invgauss_sample(10, 1.5, 2.0, dtype=torch.float32).dtype == torch.float32
    # first: a later piece of the same stream, as hpcml.invgauss.sample's
    torch.library.opcheck(torch.ops.hpcml.invgauss_sample.default, (100, mu, lam, 7, True, 900))
    np.testing.assert_array_equal(ht.invgauss_sample(100, 1.5, 2.0, seed=7, first=900).numpy(),
                                  hpcml.invgauss.sample(1000, 1.5, 2.0, seed=7)[900:])
    with pytest.raises(ValueError, match="first"):
        ht.invgauss_sample(10, 1.5, 2.0, first=-1)


def test_solve_matrix_games_opcheck_and_values():
    A = torch.from_numpy(np.random.default_rng(3).standard_normal((4, 5, 3)).astype(np.float32))
    torch.library.opcheck(torch.ops.hpcml.solve_matrix_games.default, (A, 40, "prm+", True, "quadratic", False, 0))
    got = ht.solve_matrix_games(A, iterations=40)
    want = hpcml.solve_matrix_games(A.numpy(), iterations=40)
    for a, b in zip(got, (want.row_strategy, want.col_strategy, want.value, want.gap, want.eps_bound)):
        np.testing.assert_array_equal(a.numpy(), b)


def test_a_compiled_graph_of_every_operator_has_no_break_and_gives_the_eager_result():
    torch._dynamo.reset()

    # torch's own work after each operator is exact in any order (integer sums, max), so the
    # comparison is bit for bit: Inductor sums floats in another order than eager (a mean of 64
    # doubles differs by an ulp on an AVX2 CPU), which says nothing of hpcml's operators.
    def program(x, v, A):
        S = ht.similarity(x, mode="count").float()
        cdf = ht.invgauss("cdf", v, 1.0, 2.0)
        row, col, value, gap, eps = ht.solve_matrix_games(A, iterations=30)
        draws = ht.invgauss_sample(64, 1.0, 2.0, seed=3)
        return S.mean(dim=0), cdf * 2, row.amax(dim=1), value + gap, draws.amax()

    x = features(8, 33)
    v = torch.linspace(0.1, 3.0, 50, dtype=torch.float64)
    A = torch.randn(2, 3, 3)
    compiled = torch.compile(program, fullgraph=True)  # fullgraph: a graph break is an error
    for got, want in zip(compiled(x, v, A), program(x, v, A)):
        torch.testing.assert_close(got, want, rtol=0, atol=0)


def test_pair_lists_compile_with_their_data_dependent_size():
    torch._dynamo.reset()
    x = features(5, 40)

    def program(x):
        i, j = ht.similarity_pairs(x, threshold=2.0)
        return i * 1000 + j

    compiled = torch.compile(program, fullgraph=True)
    torch.testing.assert_close(compiled(x), program(x))


_skip_without_cuda = pytest.mark.skipif(not torch.cuda.is_available() or hpcml.cuda_status()["status"] != "ok",
                                        reason="needs a CUDA device that torch and hpcml both see")


def cuda(test):
    return pytest.mark.cuda(_skip_without_cuda(test))


@cuda
def test_the_operators_on_cuda_tensors_give_the_cpu_results():
    x = features(9, 130)
    torch.library.opcheck(torch.ops.hpcml.similarity.default, (x.cuda(), None, 1.0, "count", "default", 0))
    torch.testing.assert_close(ht.similarity(x.cuda()).cpu(), ht.similarity(x), rtol=0, atol=0)
    v = torch.linspace(0.1, 3.0, 64, dtype=torch.float64)
    torch.library.opcheck(torch.ops.hpcml.invgauss.default, ("logsf", v.cuda(), v.new_tensor(1.0).cuda(),
                                                              v.new_tensor(2.0).cuda()))
    torch.testing.assert_close(ht.invgauss("cdf", v.cuda(), 1.0, 2.0).cpu(), ht.invgauss("cdf", v, 1.0, 2.0))
    i, j = ht.similarity_pairs(x.cuda(), threshold=1.5)
    torch.testing.assert_close(torch.stack([i.cpu(), j.cpu()]), torch.stack(ht.similarity_pairs(x, threshold=1.5)))


@cuda
@pytest.mark.parametrize("mode", ["all", "count"])
def test_similarity_pairs_of_cuda_tensors_stay_on_the_device(mode):
    # The pairs are reduced, kept and ordered on the device, in tensors from torch's allocator:
    # opcheck, the values against the CPU's (y = x and not, nothing passing), and compiled.
    x, y = features(12, 700), features(12, 530)
    min_count = 3 if mode == "count" else 1
    torch.library.opcheck(torch.ops.hpcml.similarity_pairs.default, (x.cuda(), y.cuda(), 1.5, mode, min_count, 0))
    for other in (None, y):
        for least in (min_count, 13) if mode == "count" else (min_count,):  # 13 > samples: no pair
            got = ht.similarity_pairs(x.cuda(), None if other is None else other.cuda(), threshold=1.5, mode=mode,
                                      min_count=least)
            want = ht.similarity_pairs(x, other, threshold=1.5, mode=mode, min_count=least)
            assert all(g.device.type == "cuda" for g in got)
            for g, w in zip(got, want):
                torch.testing.assert_close(g.cpu(), w, rtol=0, atol=0)
    torch._dynamo.reset()
    compiled = torch.compile(lambda x: ht.similarity_pairs(x, threshold=1.5, mode=mode, min_count=min_count),
                             fullgraph=True)
    for g, w in zip(compiled(x.cuda()), ht.similarity_pairs(x, threshold=1.5, mode=mode, min_count=min_count)):
        torch.testing.assert_close(g.cpu(), w, rtol=0, atol=0)


@cuda
def test_similarity_host_gives_a_pinned_host_result_of_cuda_inputs():
    x = features(9, 700)
    torch.library.opcheck(torch.ops.hpcml.similarity_host.default, (x.cuda(), None, 1.0, "all", "bool", 0))
    got = ht.similarity(x.cuda(), mode="all", dtype="bool", host=True)
    assert got.device.type == "cpu" and got.is_pinned()
    torch.testing.assert_close(got, ht.similarity(x, mode="all", dtype="bool"), rtol=0, atol=0)
    torch._dynamo.reset()
    compiled = torch.compile(lambda x: ht.similarity(x, mode="all", dtype="bool", host=True), fullgraph=True)
    torch.testing.assert_close(compiled(x.cuda()), got, rtol=0, atol=0)


@cuda
def test_similarity_is_captured_in_a_cuda_graph():
    # mode="reduce-overhead": the call must queue on torch's stream, allocate through torch and
    # never synchronise, or the capture fails.
    torch._dynamo.reset()
    x = features(16, 300).cuda()
    program = torch.compile(lambda x: ht.similarity(x).sum(dim=0), mode="reduce-overhead", fullgraph=True)
    for _ in range(3):  # warm-up, capture, replay
        got = program(x)
    torch.testing.assert_close(got, ht.similarity(x).sum(dim=0), rtol=0, atol=0)


@cuda
def test_sampling_on_cuda_is_captured_and_replays_its_seed():
    # Drawn in place on torch's stream (sample_device): capturable; every replay uses the seed
    # the graph was captured with, so it draws the same numbers.
    torch._dynamo.reset()
    mu, lam = (torch.tensor([v], dtype=torch.float64, device="cuda") for v in (1.5, 2.0))
    torch.library.opcheck(torch.ops.hpcml.invgauss_sample.default, (1000, mu, lam, 7, True))
    program = torch.compile(lambda mu, lam: ht.invgauss_sample(4096, mu, lam, seed=7) * 2, mode="reduce-overhead",
                            fullgraph=True)
    draws = [program(mu, lam).clone() for _ in range(3)]  # warm-up, capture, replay
    torch.testing.assert_close(draws[2], draws[1], rtol=0, atol=0)
    expected = torch.from_numpy(hpcml.invgauss.sample(4096, 1.5, 2.0, seed=7, backend="cpu")) * 2
    torch.testing.assert_close(draws[2].cpu(), expected, rtol=1e-13, atol=0)


@cuda
@pytest.mark.parametrize("shape", [(500, 3, 4), (2, 100, 70)])
def test_games_on_cuda_are_solved_in_place_and_captured(shape):
    # solve_matrix_games_device on torch's stream, into tensors (and, for games of more than 64
    # actions, a workspace) from torch's allocator: the bits of the host call on the GPU, which
    # are the CPU's for small games.
    torch._dynamo.reset()
    A = torch.randn(*shape, generator=torch.Generator().manual_seed(5))
    s = hpcml.solve_matrix_games(A.numpy(), iterations=50, backend="cuda")
    expected = [torch.from_numpy(np.asarray(a, dtype=np.float64))
                for a in (s.row_strategy, s.col_strategy, s.value, s.gap, s.eps_bound)]
    torch.library.opcheck(torch.ops.hpcml.solve_matrix_games.default,
                          (A.cuda(), 50, "prm+", True, "quadratic", False, 0))
    for got, want in zip(ht.solve_matrix_games(A.cuda(), iterations=50), expected):
        torch.testing.assert_close(got.cpu(), want, rtol=0, atol=0)
    program = torch.compile(lambda A: ht.solve_matrix_games(A, iterations=50)[3].max(), mode="reduce-overhead",
                            fullgraph=True)
    for _ in range(3):  # warm-up, capture, replay
        got = program(A.cuda())
    torch.testing.assert_close(got.cpu(), expected[3].max(), rtol=0, atol=0)
