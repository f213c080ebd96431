"""The docs' blocks (test_docs.py): their counts at the end of the run."""

from test_docs import COUNTS


def pytest_terminal_summary(terminalreporter):
    if COUNTS:
        terminalreporter.write_line("docs blocks: " + ", ".join(f"{n} {k}" for k, n in sorted(COUNTS.items())))
