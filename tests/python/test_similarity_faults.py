"""hpcml-similarity under faults: a full or read-only disk, a damaged journal, inputs changed
before a resume, two jobs on one output, SIGKILL at random moments, a rank dying under mpirun.
Each ends with a clear message and an exit code, and OUT.npy exists only when it is complete."""

import fcntl
import os
import random
import resource
import signal
import subprocess
import time

import numpy as np
import pytest

from test_similarity_cli import ENV, MPIRUN, NO_MPI, TOOL, run

pytestmark = pytest.mark.skipif(not TOOL.exists(), reason=f"{TOOL} not built")


@pytest.fixture
def job(tmp_path):
    """An input whose output takes 16 blocks, and the bytes an uninterrupted run writes."""
    rng = np.random.default_rng(1)
    np.save(tmp_path / "x.npy", rng.standard_normal((64, 300)).astype(np.float32))
    args = [tmp_path / "x.npy", "--tile", 19]
    run(*args, "--output", tmp_path / "reference.npy")
    return tmp_path, args, (tmp_path / "reference.npy").read_bytes()


def tmpfs(path, options):
    """A tmpfs mounted at `path` (the test is skipped where this machine does not allow it)."""
    path.mkdir()
    p = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)], env=ENV, capture_output=True, text=True)
    if p.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {p.stderr.strip()}")


@pytest.fixture
def small_disk(tmp_path):
    disk = tmp_path / "disk"
    tmpfs(disk, "size=64k")
    yield disk
    subprocess.run(["umount", str(disk)], env=ENV)


def test_disk_full_midway(job, small_disk):
    d, args, _ = job
    out = small_disk / "s.npy"  # 360 KB of int32 on a 64 KiB disk
    p = run(*args, "--output", out, check=False)
    assert p.returncode == 1 and "No space left on device" in p.stderr, p.stderr
    assert not out.exists()


def test_file_size_limit(tmp_path):
    np.save(tmp_path / "x.npy", np.zeros((4, 2000), np.float32))  # a 16 MB output under an 8 MB limit

    def limit():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG instead of a signal
        resource.setrlimit(resource.RLIMIT_FSIZE, (8 << 20, 8 << 20))

    p = subprocess.run([str(TOOL), str(tmp_path / "x.npy"), "--output", str(tmp_path / "s.npy")], env=ENV, capture_output=True,
                       text=True, preexec_fn=limit)
    assert p.returncode == 1 and "--output" in p.stderr and "File too large" in p.stderr, p.stderr
    assert not (tmp_path / "s.npy").exists()


def test_read_only_output_directory(job):
    d, args, _ = job
    ro = d / "ro"
    tmpfs(ro, "ro,size=64k")
    try:
        p = run(*args, "--output", ro / "s.npy", check=False)
        assert p.returncode == 1 and "--output" in p.stderr and "Read-only file system" in p.stderr, p.stderr
    finally:
        subprocess.run(["umount", str(ro)], env=ENV)


def crash_after(d, args, blocks, out="s.npy"):
    p = run(*args, "--output", d / out, "--stop-after", blocks, check=False)
    assert p.returncode == 3
    assert not (d / out).exists() and (d / f"{out}.partial").exists()
    return sorted((d / f"{out}.journal").glob("rank-*"))


@pytest.mark.parametrize("damage", ["cut mid-line", "garbage lines", "claims a block never written",
                                    "block bytes changed", "logs deleted", "partial output deleted"])
def test_damaged_journal_resumes_to_the_same_bytes(job, damage):
    d, args, reference = job
    log = crash_after(d, args, 5)[0]
    text = log.read_text()
    assert len(text.splitlines()) == 5
    if damage == "cut mid-line":
        log.write_text(text[: len(text) - 7])
    elif damage == "garbage lines":
        log.write_text(text + "\n\0\0zz\n-1 0000000000000000\n99999999999999999999999 00\n12\n7 xyz\n")
    elif damage == "claims a block never written":
        log.write_text(text + "15 0123456789abcdef\n")
    elif damage == "block bytes changed":
        with open(d / "s.npy.partial", "r+b") as f:
            f.seek(200)
            f.write(b"\x55")
    elif damage == "logs deleted":
        log.unlink()
    else:
        (d / "s.npy.partial").unlink()
    run(*args, "--output", d / "s.npy")
    assert (d / "s.npy").read_bytes() == reference
    assert not (d / "s.npy.journal").exists() and not (d / "s.npy.partial").exists() and not (d / "s.npy.lock").exists()


def test_damaged_command_file_is_refused(job):
    d, args, reference = job
    crash_after(d, args, 3)
    (d / "s.npy.journal" / "command").write_text("hpcml-similarity 2\ngarbage")
    p = run(*args, "--output", d / "s.npy", check=False)
    assert p.returncode == 1 and "different command or input" in p.stderr
    run(*args, "--output", d / "s.npy", "--restart")
    assert (d / "s.npy").read_bytes() == reference


def test_input_changed_between_crash_and_resume(job):
    d, args, _ = job
    crash_after(d, args, 3)
    changed = np.random.default_rng(2).standard_normal((64, 300)).astype(np.float32)
    np.save(d / "x.npy", changed)
    st = os.stat(d / "x.npy")
    os.utime(d / "x.npy", ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    p = run(*args, "--output", d / "s.npy", check=False)
    assert p.returncode == 1 and "different command or input" in p.stderr
    run(*args, "--output", d / "s.npy", "--restart")
    run(*args, "--output", d / "fresh.npy")
    assert (d / "s.npy").read_bytes() == (d / "fresh.npy").read_bytes()


def test_two_jobs_cannot_write_one_output(job):
    d, args, reference = job
    # Another job holds the lock: this one refuses and touches nothing.
    with open(d / "s.npy.lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        p = run(*args, "--output", d / "s.npy", check=False)
        assert p.returncode == 1 and "another hpcml-similarity is writing" in p.stderr, p.stderr
        assert not (d / "s.npy").exists() and not (d / "s.npy.journal").exists()
    assert not (d / "s.npy.partial").exists()
    # Two real jobs started together: each finishes or refuses, and the output is right.
    for _ in range(5):
        procs = [subprocess.Popen([str(TOOL), *map(str, args), "--output", str(d / "t.npy"), "--restart", "--delay-ms", "5"],
                                  env=ENV, stderr=subprocess.PIPE, text=True) for _ in range(2)]
        results = [(p.wait(), p.stderr.read()) for p in procs]
        for code, err in results:
            assert code == 0 or (code == 1 and "another hpcml-similarity" in err), err
        assert any(code == 0 for code, _ in results)
        assert (d / "t.npy").read_bytes() == reference


def finish_cleanup(cmd, output, reference):
    # A kill between the output's rename and the journal's removal leaves the journal behind
    # (the output is complete: the rename is the commit); the next run clears it.
    journal = output.with_name(output.name + ".journal")
    if journal.exists():
        subprocess.run(cmd, env=ENV, check=True, stderr=subprocess.DEVNULL)
        assert output.read_bytes() == reference
    assert not journal.exists()


def test_sigkill_at_random_moments(job):
    d, args, reference = job
    cmd = [str(TOOL), *map(str, args), "--output", str(d / "s.npy"), "--delay-ms", "2"]
    start = time.monotonic()
    subprocess.run(cmd + ["--restart"], env=ENV, check=True)
    whole = time.monotonic() - start
    rng = random.Random(3)
    for _ in range(12):
        (d / "s.npy").unlink()
        for _ in range(rng.randint(1, 3)):  # killed, resumed, perhaps killed again
            p = subprocess.Popen(cmd, env=ENV, stderr=subprocess.DEVNULL)
            time.sleep(rng.uniform(0, whole))
            p.send_signal(signal.SIGKILL)
            p.wait()
            if (d / "s.npy").exists():  # it finished before the kill
                break
        if not (d / "s.npy").exists():
            subprocess.run(cmd, env=ENV, check=True, stderr=subprocess.DEVNULL)
        assert (d / "s.npy").read_bytes() == reference
        finish_cleanup(cmd, d / "s.npy", reference)


def test_pairs_survive_sigkill_at_random_moments(job):
    # --pairs with y = x (mirrored blocks): part files written whole and renamed, so a kill at
    # any moment leaves parts that are either complete and journaled, or recomputed.
    d, args, _ = job
    base = [str(TOOL), *map(str, args), "--pairs", "--min-count", "40"]
    cmd = base + ["--output", str(d / "p.npy"), "--delay-ms", "2"]
    start = time.monotonic()
    subprocess.run(base + ["--output", str(d / "whole.npy"), "--delay-ms", "2"], env=ENV, check=True)
    whole = time.monotonic() - start
    reference = (d / "whole.npy").read_bytes()
    assert len(np.load(d / "whole.npy")) > 300  # the diagonal and more
    rng = random.Random(5)
    for _ in range(6):
        (d / "p.npy").unlink(missing_ok=True)
        for _ in range(rng.randint(1, 3)):
            p = subprocess.Popen(cmd, env=ENV, stderr=subprocess.DEVNULL)
            time.sleep(rng.uniform(0, whole))
            p.send_signal(signal.SIGKILL)
            p.wait()
            if (d / "p.npy").exists():
                break
        if not (d / "p.npy").exists():
            subprocess.run(cmd, env=ENV, check=True, stderr=subprocess.DEVNULL)
        assert (d / "p.npy").read_bytes() == reference
        finish_cleanup(cmd, d / "p.npy", reference)


@pytest.mark.skipif(NO_MPI is not None, reason=str(NO_MPI))
@pytest.mark.parametrize("output", [[], ["--pairs", "--min-count", "40"]], ids=["dense", "pairs"])
def test_a_rank_dies_under_mpirun(job, output):
    d, args, reference = job
    if output:
        args = [*args, *output]
        run(*args, "--output", d / "whole.npy")
        reference = (d / "whole.npy").read_bytes()
    out = d / "s.npy"
    job_ = subprocess.Popen([MPIRUN, "-np", "3", "--oversubscribe", str(TOOL), *map(str, args), "--output", str(out),
                             "--delay-ms", "300"], env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    killed = False
    while time.monotonic() < deadline and not killed and job_.poll() is None:
        time.sleep(0.02)
        if not any((d / "s.npy.journal").glob("rank-*")):
            continue
        ps = subprocess.run(["pgrep", "-f", f"hpcml-similarity .*{out}"], env=ENV, capture_output=True, text=True).stdout.split()
        for pid in [int(p) for p in ps if int(p) != job_.pid]:
            try:
                os.kill(pid, signal.SIGKILL)
                killed = True
                break
            except ProcessLookupError:  # that rank is gone already: try another
                continue
    assert killed, "no rank was found running"
    code = job_.wait(timeout=60)
    assert code != 0
    assert not out.exists()
    run(*args, "--output", out)
    assert out.read_bytes() == reference


def test_a_journal_line_vouches_only_for_its_own_block(tmp_path):
    """Only row 12 of S is non-zero: every other block's bytes equal the unwritten zeros of
    block 12, so a line renumbered to 12 (a damaged digit, or a cut line "1" joined to "2 ...")
    would pass a checksum of the bytes alone."""
    x = np.zeros((4, 16), np.float32)
    x[:, 12] = 5
    y = np.full((4, 40), 10, np.float32)
    y[:, 0] = 5
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", y)
    args = [tmp_path / "x.npy", "--y", tmp_path / "y.npy", "--mode", "all", "--tile", 1]
    run(*args, "--output", tmp_path / "reference.npy")
    assert np.load(tmp_path / "reference.npy").sum() == 1
    log = crash_after(tmp_path, args, 3)[0]
    block, digest = log.read_text().splitlines()[0].split()
    assert int(block) != 12
    log.write_text(log.read_text() + f"12 {digest}\n")
    run(*args, "--output", tmp_path / "s.npy")
    assert (tmp_path / "s.npy").read_bytes() == (tmp_path / "reference.npy").read_bytes()


def test_a_tile_past_the_output_is_the_whole_output(job):
    d, args, reference = job
    run(d / "x.npy", "--tile", 2**36, "--output", d / "s.npy")
    run(d / "x.npy", "--tile", 300, "--output", d / "t.npy")
    assert (d / "s.npy").read_bytes() == (d / "t.npy").read_bytes()
