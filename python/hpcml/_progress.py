"""The ``progress=`` argument of the long calls: a tqdm bar, a line on stderr, or the caller's callable."""

from __future__ import annotations

import sys

from . import _arrays


class _Line:
    """A percentage on one stderr line, where tqdm is not installed."""

    def __init__(self, description, total, unit):
        self.description, self.total, self.unit, self.n = description, total, unit, 0

    def update(self, count):
        self.n += count
        sys.stderr.write(f"\r{self.description}: {100.0 * self.n / max(self.total, 1):5.1f}% "
                         f"of {self.total:.3g} {self.unit}")
        sys.stderr.flush()

    def close(self):
        sys.stderr.write("\n")
        sys.stderr.flush()


class _Bar:
    """progress=True: a bar made at the first report (a call shorter than the interval makes
    none), tqdm's where it is installed."""

    def __init__(self, description, unit):
        self.description, self.unit, self.bar = description, unit, None

    def __call__(self, done, total):
        if self.bar is None:
            try:
                from tqdm.auto import tqdm  # type: ignore[import-untyped]
            except ImportError:
                self.bar = _Line(self.description, total, self.unit)
            else:
                self.bar = tqdm(total=total, desc=self.description, unit=self.unit, unit_scale=True)
        self.bar.update(done - self.bar.n)
        if done >= total:  # the last report
            self.bar.close()


def callback(progress, description, unit):
    """What the binding takes for ``progress``: None, or a callable (done, total)."""
    if progress is None or progress is False:
        return None
    if progress is True:
        return _Bar(description, unit)
    if callable(progress):
        return progress
    raise TypeError(f"progress: must be True, False, None or a callable (done, total), got {type(progress).__name__}")


def interval(seconds):
    """progress_interval as the binding takes it: a real number (the C++ library checks that it is
    finite and >= 0)."""
    return _arrays.real(seconds, "progress_interval")
