"""Every list a kernel family joins names all three families, and docs/adding-a-family.md names
the same lists, in the same order (its section "The lists it joins"): a family left out of a
list, or a list left out of the doc, fails here."""

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]
FAMILIES = ("similarity", "regret", "invgauss")
# Each family's public Python name where a list holds that rather than the folder's name.
PUBLIC = {"similarity": "similarity", "regret": "solve_matrix_games", "invgauss": "invgauss"}
# A call of each family from the installed module.
CALL = {"similarity": "hpcml.similarity(", "regret": "hpcml.solve_matrix_game(", "invgauss": "hpcml.invgauss."}

# (the list's file as the doc names it, with `name` for the family's folder; what each family's
# entry looks like there, {name}, {public} and {call} filled in; the statement the entry must be
# in, if any)
LISTS = [
    ("kernels/CMakeLists.txt", ["hpcml_sources({name} "], None),
    ("include/hpcml/hpcml.hpp", ["<hpcml/{name}.hpp>"], None),
    ("tests/CMakeLists.txt", ["hpcml_add_test(test_{name} ", "set(filter_{name} "], None),
    ("python/CMakeLists.txt", ["src/{name}.cpp"], None),
    ("python/src/bindings.hpp", ["void bind_{name}(nb::module_& m);"], None),
    ("python/src/module.cpp", ["hpcml_python::bind_{name}(m);"], None),
    ("python/hpcml/__init__.py", ['"{public}"'], "__all__"),
    ("python/hpcml/torch.py", ['"hpcml::{public}"'], None),
    ("python/hpcml/dask/__init__.py", ['"{public}"'], "__all__"),
    ("bench/CMakeLists.txt", ["hpcml_add_bench(bench_{name} "], None),
    ("python/pyproject.toml", ['bench_{name} = "hpcml._programs:bench_{name}"'], None),
    ("python/hpcml/_programs.py", ["def bench_{name}() -> None:"], None),
    ("bench/sass_kernels.py", ['"{name}/'], None),
    ("scripts/gpu-suite.sh", ["test_{name}"], "gpu_case_programs="),
    ("scripts/arm64.sh", ["test_{name}"], "suites="),
    ("tests/typing/usage.py", ["def {name}_checks() -> None:"], None),
    ("tests/install/check_module.py", ["{call}"], None),
    ("examples/name/run.py", None, None),
    ("docs/name.md", None, None),
    ("docs/python.md", ["{public}("], None),
    ("README.md", ["docs/{name}.md"], None),
]


def _lines_with(text, start):
    """The statement that begins with `start` (continued over the lines of an open bracket)."""
    at = text.index(start)
    depth, end = 0, at
    while end < len(text):
        c = text[end]
        depth += c in "([{"
        depth -= c in ")]}"
        if c == "\n" and depth <= 0:
            break
        end += 1
    return text[at:end]


def test_every_list_names_every_family():
    missing = []
    for path, entries, line in LISTS:
        for family in FAMILIES:
            where = ROOT / path.replace("name", family) if entries is None else ROOT / path
            if entries is None:
                if not where.is_file():
                    missing.append(f"{where.relative_to(ROOT)}: missing")
                continue
            text = where.read_text(encoding="utf-8")
            if line:
                text = _lines_with(text, line)
            for entry in entries:
                wanted = entry.format(name=family, public=PUBLIC[family], call=CALL[family])
                if wanted not in text:
                    missing.append(f"{path}: no {wanted!r}")
    assert not missing, "\n".join(missing)


def test_the_doc_names_the_same_lists_in_the_same_order():
    doc = (ROOT / "docs/adding-a-family.md").read_text(encoding="utf-8")
    section = doc.split("## The lists it joins", 1)[1].split("\n## ", 1)[0]
    named = re.findall(r"^\d+\. `([^`]+)`", section, re.M)  # one list per item, its file first
    assert named == [path for path, _, _ in LISTS]
