"""hpcml-similarity: the library's results in .npy files, the same under mpirun, resumable."""

import os
import pathlib
import shutil
import subprocess

import numpy as np
import pytest

import hpcml

BIN = pathlib.Path(os.environ.get("HPCML_BIN_DIR", pathlib.Path(__file__).parents[2] / "build" / "bin"))
TOOL = BIN / "hpcml-similarity"
MPIRUN = shutil.which("mpirun")
# The tools run as built (a sanitizer build links its runtime itself): no preload of the interpreter's.
ENV = dict({k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}, HPCML_QUIET="1", OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
           OMPI_MCA_rmaps_base_oversubscribe="1")

pytestmark = pytest.mark.skipif(not TOOL.exists(), reason=f"{TOOL} not built")


def _why_not_under_mpirun():
    """Why this tool cannot be tested under mpirun here, or None: a build without MPI would run
    as several independent processes racing for one output."""
    if MPIRUN is None:
        return "no mpirun"
    if not TOOL.exists():
        return f"{TOOL} not built"
    version = subprocess.run([str(TOOL), "--version"], env=ENV, capture_output=True, text=True).stdout
    if "parallel: MPI" not in version:
        return "hpcml-similarity is built without MPI: " + version.strip().replace("\n", "; ")
    return None


NO_MPI = _why_not_under_mpirun()


def run(*args, mpi=0, check=True):
    cmd = ([MPIRUN, "-np", str(mpi), "--oversubscribe"] if mpi else []) + [str(TOOL), *map(str, args)]
    p = subprocess.run(cmd, env=ENV, capture_output=True, text=True)
    if check and p.returncode != 0:
        raise AssertionError(f"{cmd} exited {p.returncode}:\n{p.stderr}")
    return p


@pytest.fixture
def data(tmp_path):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((50, 83)).astype(np.float32)
    y = rng.standard_normal((50, 61)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", y)
    return tmp_path, x, y


@pytest.mark.parametrize("mode,dtype", [("count", "int32"), ("count", "uint16"), ("all", "bool"), ("all", "bitmask")])
def test_file_equals_library(data, mode, dtype):
    d, x, y = data
    run(d / "x.npy", "--y", d / "y.npy", "--output", d / "s.npy", "--mode", mode, "--dtype", dtype, "--tile", 17,
        "--threshold", 1.5 if mode == "all" else 1.0)
    got = np.load(d / "s.npy", mmap_mode="r")
    expected = hpcml.similarity(x, y, mode=mode, dtype=dtype, threshold=1.5 if mode == "all" else 1.0)
    assert got.shape == expected.shape and got.dtype == expected.dtype
    np.testing.assert_array_equal(got, expected)
    assert not (d / "s.npy.journal").exists() and not (d / "s.npy.partial").exists()  # a finished run leaves only its output


@pytest.mark.skipif(NO_MPI is not None, reason=str(NO_MPI))
@pytest.mark.parametrize("self_similarity", [True, False])
def test_mpirun_gives_identical_bytes(data, self_similarity):
    d, x, y = data
    extra = [] if self_similarity else ["--y", d / "y.npy"]
    for mode in ("count", "all"):
        run(d / "x.npy", *extra, "--output", d / "one.npy", "--tile", 13, "--mode", mode)
        run(d / "x.npy", *extra, "--output", d / "three.npy", "--tile", 13, "--mode", mode, mpi=3)
        assert (d / "one.npy").read_bytes() == (d / "three.npy").read_bytes()


@pytest.mark.parametrize("mode,dtype", [("count", "int32"), ("count", "uint16"), ("count", "uint8"), ("all", "bool"),
                                        ("all", "bitmask")])
def test_symmetric_blocks_write_their_mirrors(tmp_path, mode, dtype):
    # y omitted: only blocks on and above the diagonal are computed, each writing its mirror.
    # Features are offsets plus noise so that about a third of the pairs pass in mode all; NaN
    # and inf among them. The bytes equal a run with y a copy of x (no symmetry), whatever the
    # tile (tiles of 1 and 13 round up to 8 for bitmask), with bands split into several blocks
    # (a block then starts right of its band's first row), and under mpirun.
    rng = np.random.default_rng(1)
    x = (rng.uniform(0, 8, 101) + rng.uniform(-0.2, 0.2, (20, 101))).astype(np.float32)
    x[3, 50], x[5, 1] = np.nan, np.inf
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "copy.npy", x)
    expected = hpcml.similarity(x, x.copy(), mode=mode, dtype=dtype, threshold=2.0)
    if mode == "all":
        assert 0.2 < np.mean(np.unpackbits(expected, axis=1, count=101, bitorder="little") if dtype == "bitmask" else expected) < 0.6
    for tile, block_bytes in ((1, 1), (8, 300), (13, 1), (13, 2000), (100, 1), (1000, 1 << 28)):
        args = ["--mode", mode, "--dtype", dtype, "--tile", tile, "--threshold", 2.0, "--block-bytes", block_bytes]
        run(tmp_path / "x.npy", "--output", tmp_path / "sym.npy", *args)
        run(tmp_path / "x.npy", "--y", tmp_path / "copy.npy", "--output", tmp_path / "plain.npy", *args)
        np.testing.assert_array_equal(np.load(tmp_path / "sym.npy"), expected, err_msg=f"tile {tile}")
        assert (tmp_path / "sym.npy").read_bytes() == (tmp_path / "plain.npy").read_bytes()
        if NO_MPI is None and tile == 13:
            run(tmp_path / "x.npy", "--output", tmp_path / "mpi.npy", *args, mpi=3)
            assert (tmp_path / "mpi.npy").read_bytes() == (tmp_path / "plain.npy").read_bytes()


@pytest.mark.parametrize("options", [["--mode", "all", "--dtype", "bitmask", "--threshold", "3"], ["--mode", "count"]])
def test_symmetric_resume_after_a_crash(data, options):
    # A crash after 3 of the mirrored blocks: the resumed file equals an uninterrupted run.
    d, _, _ = data
    run(d / "x.npy", "--output", d / "full.npy", "--tile", 16, *options)
    crashed = run(d / "x.npy", "--output", d / "s.npy", "--tile", 16, *options, "--stop-after", 3, check=False)
    assert crashed.returncode == 3
    resumed = subprocess.run([str(TOOL), str(d / "x.npy"), "--output", str(d / "s.npy"), "--tile", "16", *options], env=ENV,
                             capture_output=True, text=True, check=True)
    assert "3 already done" in resumed.stderr, resumed.stderr
    assert (d / "s.npy").read_bytes() == (d / "full.npy").read_bytes()


def _pair_data(tmp_path):
    rng = np.random.default_rng(2)
    x = (rng.uniform(0, 8, 90) + rng.uniform(-0.2, 0.2, (20, 90))).astype(np.float32)
    y = (rng.uniform(0, 8, 70) + rng.uniform(-0.2, 0.2, (20, 70))).astype(np.float32)
    x[3, 40], x[5, 1], x[6, 2] = np.nan, np.inf, -np.inf
    x[:, 7] = x[:, 8] + np.float32(2.0)  # differences of exactly t do not count
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", y)
    return x, y


def _expected_pairs(x, y, mode, min_count):
    s = hpcml.similarity(x, y.copy(), mode=mode, threshold=2.0)
    if mode == "all":
        return np.stack(np.nonzero(s), axis=1).astype(np.int64)
    i, j = np.nonzero(s >= min_count)
    return np.stack([i, j, s[i, j]], axis=1).astype(np.int64)


@pytest.mark.parametrize("mode,min_count", [("all", None), ("count", 1), ("count", 17), ("count", 21)])
@pytest.mark.parametrize("self_similarity", [True, False])
def test_pairs_equal_numpy(tmp_path, mode, min_count, self_similarity):
    # (i, j[, count]) rows in np.nonzero's order, for y = x (mirrored blocks) and --y, tiles that
    # split the output in many ways, one process and mpirun; min_count 21 > samples: no pairs.
    x, y = _pair_data(tmp_path)
    extra = [] if self_similarity else ["--y", tmp_path / "y.npy"]
    expected = _expected_pairs(x, x if self_similarity else y, mode, min_count)
    assert expected.shape[1] == (2 if mode == "all" else 3) and (min_count == 21) == (len(expected) == 0)
    options = ["--mode", mode, "--threshold", 2.0, "--pairs"] + (["--min-count", min_count] if min_count else [])
    for tile, block_bytes in ((1, 1 << 28), (13, 1 << 28), (13, 1), (16, 5000), (1000, 1 << 28)):
        run(tmp_path / "x.npy", *extra, "--output", tmp_path / "p.npy", "--tile", tile, "--block-bytes", block_bytes, *options)
        got = np.load(tmp_path / "p.npy")
        assert got.dtype == np.int64 and got.shape == expected.shape, (tile, got.shape)
        np.testing.assert_array_equal(got, expected, err_msg=f"tile {tile}")
    if NO_MPI is None:
        run(tmp_path / "x.npy", *extra, "--output", tmp_path / "mpi.npy", "--tile", 13, *options, mpi=3)
        assert (tmp_path / "mpi.npy").read_bytes() == (tmp_path / "p.npy").read_bytes()
    assert not (tmp_path / "p.npy.journal").exists() and not (tmp_path / "p.npy.partial").exists()


def test_pairs_resume_after_a_gathering_cut_short(tmp_path):
    # Every block done and journaled, the partial output left half-written by a gathering that
    # died: the rerun reuses every part and writes the output again.
    _pair_data(tmp_path)
    cmd = [tmp_path / "x.npy", "--output", tmp_path / "p.npy", "--tile", 16, "--mode", "all", "--threshold", 2.0, "--pairs"]
    run(*cmd[:1], "--output", tmp_path / "whole.npy", *cmd[3:])
    blocks = (90 + 15) // 16
    assert run(*cmd, "--stop-after", blocks, check=False).returncode == 3  # dies after the last block, before gathering
    (tmp_path / "p.npy.partial").write_bytes((tmp_path / "whole.npy").read_bytes()[:1000])
    resumed = subprocess.run([str(TOOL), *map(str, cmd)], env=ENV, capture_output=True, text=True, check=True)
    assert f"0 blocks computed, {blocks} already done" in resumed.stderr, resumed.stderr
    assert (tmp_path / "p.npy").read_bytes() == (tmp_path / "whole.npy").read_bytes()


def test_pairs_resume_after_a_crash(tmp_path):
    # Killed after 3 blocks (their part files journaled), resumed: the same file as one run; a
    # part file damaged meanwhile is recomputed, not trusted.
    _pair_data(tmp_path)
    cmd = [tmp_path / "x.npy", "--output", tmp_path / "p.npy", "--tile", 13, "--mode", "count", "--threshold", 2.0, "--pairs"]
    run(*cmd[:1], "--output", tmp_path / "whole.npy", *cmd[3:])
    assert run(*cmd, "--stop-after", 3, check=False).returncode == 3
    parts = sorted((tmp_path / "p.npy.journal").glob("pairs-*"))
    assert len(parts) == 3
    parts[0].write_bytes(parts[0].read_bytes()[:-8] + b"\0" * 8)
    resumed = subprocess.run([str(TOOL), *map(str, cmd)], env=ENV, capture_output=True, text=True, check=True)
    assert "2 already done" in resumed.stderr, resumed.stderr
    assert (tmp_path / "p.npy").read_bytes() == (tmp_path / "whole.npy").read_bytes()


def test_resume_computes_only_the_missing_blocks(data):
    d, x, _ = data
    run(d / "x.npy", "--output", d / "full.npy", "--tile", 20)
    crashed = run(d / "x.npy", "--output", d / "s.npy", "--tile", 20, "--stop-after", 2, check=False)
    assert crashed.returncode == 3
    assert (d / "s.npy.journal").exists()
    resumed = subprocess.run([str(TOOL), str(d / "x.npy"), "--output", str(d / "s.npy"), "--tile", "20"], env=ENV,
                             capture_output=True, text=True, check=True)
    blocks = (83 + 19) // 20  # of 20 rows by all 83 columns
    assert f"{blocks - 2} blocks computed, 2 already done" in resumed.stderr, resumed.stderr
    assert (d / "s.npy").read_bytes() == (d / "full.npy").read_bytes()
    assert not (d / "s.npy.journal").exists()


def test_a_journal_from_another_command_is_refused(data):
    d, _, _ = data
    run(d / "x.npy", "--output", d / "s.npy", "--tile", 20, "--stop-after", 2, check=False)
    assert not (d / "s.npy").exists()  # an unfinished output is never under its final name
    before = (d / "s.npy.partial").read_bytes()
    refused = run(d / "x.npy", "--output", d / "s.npy", "--tile", 30, check=False)
    assert refused.returncode == 1 and "different command" in refused.stderr
    assert (d / "s.npy.partial").read_bytes() == before
    run(d / "x.npy", "--output", d / "s.npy", "--tile", 30, "--restart")
    run(d / "x.npy", "--output", d / "t.npy", "--tile", 30)
    assert (d / "s.npy").read_bytes() == (d / "t.npy").read_bytes()


def test_fortran_order_and_float64_are_converted(data):
    d, x, _ = data
    np.save(d / "f.npy", np.asfortranarray(x.astype(np.float64)))
    run(d / "f.npy", "--output", d / "s.npy")
    np.testing.assert_array_equal(np.load(d / "s.npy"), hpcml.similarity(x))


def _raw_npy(path, header: bytes, payload=b""):
    path.write_bytes(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header + payload)


@pytest.mark.parametrize(
    "make,args,message",
    [
        (None, ["missing.npy", "--output", "o.npy"], "INPUT.npy: cannot open"),
        (lambda d: np.save(d / "c.npy", np.zeros((3, 4), np.complex64)), ["c.npy", "--output", "o.npy"], "not a real number type"),
        (lambda d: np.save(d / "t.npy", np.zeros((3, 4, 5), np.float32)), ["t.npy", "--output", "o.npy"], "2-D"),
        (lambda d: np.save(d / "b.npy", np.zeros((3, 4), ">f4")), ["b.npy", "--output", "o.npy"], "big-endian"),
        (lambda d: (np.save(d / "a.npy", np.zeros((3, 4), np.float32)), np.save(d / "z.npy", np.zeros((2, 4), np.float32))),
         ["a.npy", "--y", "z.npy", "--output", "o.npy"], "--y: has 2 samples"),
        (lambda d: np.save(d / "a.npy", np.zeros((3, 4), np.float32)), ["a.npy", "--output", "/nonexistent/dir/o.npy"], "--output"),
        (lambda d: np.save(d / "a.npy", np.zeros((3, 4), np.float32)), ["a.npy", "--output", "o.npy", "--tile", "0"], "--tile"),
        (lambda d: np.save(d / "a.npy", np.zeros((300, 4), np.float32)), ["a.npy", "--output", "o.npy", "--dtype", "uint8"], "--dtype: uint8 holds counts up to 255"),
        (lambda d: np.save(d / "a.npy", np.zeros((3, 4), np.float32)), ["a.npy", "--output", "o.npy", "--threshold", "-1"], "threshold"),
        (lambda d: np.save(d / "a.npy", np.zeros((3, 4), np.float32)), ["a.npy"], "--output: missing"),
        (lambda d: np.save(d / "a.npy", np.zeros((3, 4), np.float32)), ["a.npy", "--output", "o.npy", "--min-count", "2"],
         "--min-count: goes with --pairs"),
        (lambda d: np.save(d / "a.npy", np.zeros((3, 4), np.float32)),
         ["a.npy", "--output", "o.npy", "--pairs", "--mode", "all", "--min-count", "2"], "--min-count: goes with --pairs"),
        (lambda d: np.save(d / "a.npy", np.zeros((3, 4), np.float32)), ["a.npy", "--output", "o.npy", "--pairs", "--min-count", "0"],
         "--min-count"),
        (lambda d: np.save(d / "a.npy", np.zeros((3, 4), np.float32)), ["a.npy", "--output", "o.npy", "--pairs", "--dtype", "uint8"],
         "--dtype: --pairs"),
        (lambda d: _raw_npy(d / "h.npy", b"{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967297), }\n"),
         ["h.npy", "--output", "o.npy"], "too large"),
        (lambda d: _raw_npy(d / "h.npy", b"{'descr': '<f4', 'fortran_order': False, 'shape': (100000, 100000), }\n", b"\0" * 64),
         ["h.npy", "--output", "o.npy"], "shorter than its header says"),
        (lambda d: _raw_npy(d / "h.npy", b"{'descr': '', 'fortran_order': False, 'shape': (2, 2), }\n"),
         ["h.npy", "--output", "o.npy"], "not a real number type"),
        # No elements, but 4.3e17 rows in Fortran order: the transpose looped over the rows (a hang where
        # the compiler kept the empty loop, as in the fuzz build; tests/fuzz/corpus/npy holds that input).
        (lambda d: _raw_npy(d / "h.npy", b"{'descr': '<f8', 'fortran_order': True, 'shape': (430646668853801416, 0), }\n"),
         ["h.npy", "--output", "o.npy"], "430646668853801416 samples"),
    ],
)
def test_bad_input_is_a_clear_error(tmp_path, make, args, message):
    if make:
        make(tmp_path)
    p = subprocess.run([str(TOOL), *args], env=ENV, capture_output=True, text=True, cwd=tmp_path, timeout=60)
    # A usage error (the command line: its flags and their values) exits 2 and says where the
    # help is; a file that cannot be used exits 1. Either way one line, not the whole --help.
    # (--dtype's counts checked against the input's samples are the flag's error.)
    usage = message.startswith(("--tile", "--dtype", "threshold", "--output: missing", "--min-count")) or \
        "--dtype: int32 holds counts up to" in p.stderr
    assert p.returncode == (2 if usage else 1), p.stderr
    assert message in p.stderr, p.stderr
    lines = p.stderr.splitlines()
    assert lines[0].startswith("hpcml-similarity: error: ") and len(lines) == (2 if usage else 1), p.stderr
    if usage:
        assert lines[1] == "try 'hpcml-similarity --help'"
    assert not (tmp_path / "o.npy").exists()


def test_a_missing_file_names_the_path_and_the_reason(tmp_path):
    p = subprocess.run([str(TOOL), "nothere.npy", "--output", "o.npy"], env=ENV, capture_output=True, text=True,
                       cwd=tmp_path, timeout=60)
    assert p.returncode == 1 and "INPUT.npy: cannot open 'nothere.npy': No such file or directory" in p.stderr, p.stderr
    np.save(tmp_path / "a.npy", np.zeros((3, 4), np.float32))
    p = subprocess.run([str(TOOL), "a.npy", "--output", "gone/e.npy"], env=ENV, capture_output=True, text=True,
                       cwd=tmp_path, timeout=60)
    assert p.returncode == 1, p.stderr
    assert "--output: cannot write 'gone/e.npy': No such file or directory" in p.stderr, p.stderr


def _ways_onto_an_input(d):
    """(command-line arguments, the input they would overwrite or delete): every way an output
    or one of its files reaches an input."""
    (d / "sub").mkdir()
    (d / "link.npy").symlink_to(d / "x.npy")
    (d / "hard.npy").hardlink_to(d / "x.npy")
    for name in ["s.npy.partial", "t.npy.lock"]:
        (d / name).write_bytes((d / "x.npy").read_bytes())  # (np.save would add .npy to the names)
    (d / "u.npy.journal").mkdir()
    np.save(d / "u.npy.journal" / "in.npy", np.load(d / "x.npy"))
    return [
        (["x.npy", "--output", "x.npy"], "x.npy"),
        (["./x.npy", "--output", str(d / "x.npy")], "x.npy"),
        (["sub/../x.npy", "--output", "x.npy"], "x.npy"),
        (["x.npy", "--output", "link.npy"], "x.npy"),  # the output is a link to the input
        (["link.npy", "--output", "x.npy"], "x.npy"),  # the input is a link to the output
        (["hard.npy", "--output", "x.npy"], "x.npy"),
        (["x.npy", "--y", "y.npy", "--output", "y.npy"], "y.npy"),
        (["s.npy.partial", "--output", "s.npy"], "s.npy.partial"),
        (["t.npy.lock", "--output", "t.npy"], "t.npy.lock"),
        (["u.npy.journal/in.npy", "--output", "u.npy"], "u.npy.journal/in.npy"),
    ]


@pytest.mark.parametrize("mpi", [0, 2])
def test_an_output_over_an_input_is_refused(data, mpi):
    if mpi and NO_MPI:
        pytest.skip(NO_MPI)
    d, _, _ = data
    for args, victim in _ways_onto_an_input(d):
        before = {p: p.read_bytes() for p in d.rglob("*.npy*") if p.is_file()}
        cmd = ([MPIRUN, "-np", str(mpi), "--oversubscribe"] if mpi else []) + [str(TOOL), *args]
        p = subprocess.run(cmd, env=ENV, capture_output=True, text=True, cwd=d, timeout=120)
        assert p.returncode == 2, (args, p.stderr)
        assert "--output: " in p.stderr and "the run would overwrite or delete it" in p.stderr, (args, p.stderr)
        assert (d / victim).exists(), args
        after = {p: p.read_bytes() for p in d.rglob("*.npy*") if p.is_file()}
        assert after == before, args  # nothing written, nothing removed


GOLDEN = pathlib.Path(__file__).parents[1] / "data" / "similarity_cli"


@pytest.mark.parametrize("mpi", [0, 3])
def test_output_bytes_are_unchanged(tmp_path, mpi):
    """The files the tool wrote before its rewrite (hashes in tests/data/similarity_cli), byte for byte."""
    if mpi and NO_MPI:
        pytest.skip(NO_MPI)
    import hashlib
    import json

    expected = json.loads((GOLDEN / "expected_sha256.json").read_text())
    for key, digest in expected.items():
        if key.startswith("_"):
            continue
        mode, dtype, tile, y, threshold = key.split()
        extra = ["--y", GOLDEN / "y.npy"] if y == "y=y.npy" else []
        run(GOLDEN / "x.npy", *extra, "--output", tmp_path / "s.npy", "--mode", mode, "--dtype", dtype,
            "--tile", tile.split("=")[1], "--threshold", threshold.split("=")[1], mpi=mpi)
        assert hashlib.sha256((tmp_path / "s.npy").read_bytes()).hexdigest() == digest, key


def test_version_says_what_is_built_in():
    p = run("--version")
    assert p.stdout.startswith(f"hpcml-similarity {hpcml.__version__}\n"), p.stdout
    assert "parallel: " in p.stdout and "CUDA: " in p.stdout, p.stdout


@pytest.mark.parametrize("launcher", ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "MV2_COMM_WORLD_SIZE"])
def test_without_mpi_several_ranks_are_refused(data, launcher):
    """A build without MPI started by a launcher as one of several ranks would compute the whole
    job in each rank, all racing for one output: it refuses, saying why."""
    if NO_MPI is None or "built without MPI" not in NO_MPI:
        pytest.skip("this hpcml-similarity has MPI: under a launcher it is one rank of the job")
    d, _, _ = data
    p = subprocess.run([str(TOOL), d / "x.npy", "--output", d / "s.npy"], env=dict(ENV, **{launcher: "3"}),
                       capture_output=True, text=True)
    assert p.returncode == 1 and "started as one of 3 ranks by an MPI launcher" in p.stderr, p.stderr
    assert not (d / "s.npy").exists() and not (d / "s.npy.partial").exists()
    one = subprocess.run([str(TOOL), d / "x.npy", "--output", d / "s.npy"], env=dict(ENV, **{launcher: "1"}))
    assert one.returncode == 0  # a launcher's single rank is a plain run
