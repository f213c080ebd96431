"""The GPU suite's plan for a short window (scripts/gpu-suite.sh --budgets, checked by
scripts/gpu-rehearse.sh --check-budgets): the budgets fit, and the check fails where they do not.
The calls themselves are rehearsed by scripts/gpu-rehearse.sh (scripts/test.sh runs it)."""

import os
import subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SUITE = os.path.join(ROOT, "scripts", "gpu-suite.sh")
REHEARSE = os.path.join(ROOT, "scripts", "gpu-rehearse.sh")


def budgets():
    return subprocess.run(["bash", SUITE, "--budgets"], check=True, capture_output=True, text=True).stdout


def check(listing, setup_seconds=10):
    return subprocess.run(["bash", REHEARSE, "--check-budgets", str(setup_seconds)], input=listing,
                          capture_output=True, text=True)


def test_the_budgets_fit_a_fifteen_minute_window():
    listing = budgets()
    calls = {line.split()[1]: int(line.split()[2]) for line in listing.splitlines() if line.startswith("call ")}
    assert calls["first"] <= 270 and calls["second"] <= 270
    result = check(listing)
    assert result.returncode == 0, result.stderr
    assert "budgets fit" in result.stdout


def test_first_runs_what_matters_most_first():
    first = [line.split(maxsplit=3)[3] for line in budgets().splitlines() if line.startswith("part first ")]
    order = ["devicequery and the host link", "C++ GPU cases", "main job", "similarity kernel floor", "regret 16384^2", "invgauss 2e7",
             "Python GPU cases", "memcheck test_similarity", "memcheck test_regret"]
    assert [name for name in first if name in order] == order


def test_the_check_fails_on_a_budget_that_does_not_fit():
    listing = budgets()
    # A part of first too large for what is left of its budget.
    oversized = listing.replace("part first 40 Python GPU cases", "part first 200 Python GPU cases")
    assert oversized != listing
    result = check(oversized)
    assert result.returncode == 1 and "first needs" in result.stderr, result.stderr
    # A slow unpack alone can spoil first.
    result = check(listing, setup_seconds=120)
    assert result.returncode == 1 and "setup 120" in result.stderr, result.stderr
    # A call over 270 s, and the window over 840 s.
    result = check(listing.replace("call second 270", "call second 300"))
    assert result.returncode == 1 and "call second has 300 s, over 270" in result.stderr, result.stderr
    assert "over 840" in result.stderr
    result = check(listing.replace("start 150", "start 160"))
    assert result.returncode == 1 and "two starts take 860 s, over 840" in result.stderr, result.stderr
