"""One style, applied: ruff for Python, clang-format (.clang-format) for C and C++."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def tracked(*patterns: str) -> list[str]:
    res = subprocess.run(["git", "ls-files", *patterns], cwd=ROOT, capture_output=True, text=True)
    if res.returncode != 0:
        pytest.skip("not a git checkout")
    return res.stdout.split()


# Inputs and expected outputs of the rewriter and the semantic patches keep the shapes (and
# the styles) real code has: they are test data, not our code; so are the headers the
# rewriter generated that bench/results keeps beside its measurements.
TEST_DATA = (
    "testsuite/cocci/",
    "testsuite/rewrite/",
    "testsuite/refactor/cases/",
    "bench/results/",
)


def test_python_format_and_lint():
    files = [f for f in tracked("*.py", "scripts/enable-deb-src") if not f.startswith(TEST_DATA)]
    ruff = [sys.executable, "-m", "ruff"]
    fmt = subprocess.run(
        [*ruff, "format", "--check", *files], cwd=ROOT, capture_output=True, text=True
    )
    assert fmt.returncode == 0, fmt.stdout + fmt.stderr
    lint = subprocess.run([*ruff, "check", *files], cwd=ROOT, capture_output=True, text=True)
    assert lint.returncode == 0, lint.stdout + lint.stderr


def test_c_format():
    clang_format = shutil.which("clang-format")
    assert clang_format, "clang-format is installed by scripts/bootstrap"
    files = [f for f in tracked("*.c", "*.h", "*.cpp") if not f.startswith(TEST_DATA)]
    res = subprocess.run(
        [clang_format, "--dry-run", "--Werror", *files], cwd=ROOT, capture_output=True, text=True
    )
    assert res.returncode == 0, res.stderr[:4000]


def test_only_the_cli_imports_the_commands():
    """Commands are thin click shims over their stage's library: nothing but locktune/cli.py
    imports locktune.commands (no library module, no test, no script, no other command)."""
    import ast

    offenders = []
    for f in tracked("*.py"):
        if f == "locktune/cli.py":
            continue
        tree = ast.parse((ROOT / f).read_text(), f)
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            if any(n == "locktune.commands" or n.startswith("locktune.commands.") for n in names):
                offenders.append(f"{f}:{node.lineno}")
    assert not offenders, "imports of locktune.commands outside cli.py: " + ", ".join(offenders)


def test_generic_runtime_code_names_no_algorithm():
    """The runtime's generic code (runtime/src/*.[ch]) reaches an algorithm only through its
    operations table: it names none of them (posix, the fallback every site starts from,
    excepted), neither its table (`lt_algo_rcl`) nor its functions (`rcl_...`, `fc_...`).  What
    an algorithm needs beyond its locks goes through the table's optional hooks (algo.h)."""
    import re

    names = re.findall(
        r"^LT_ALGORITHM\((\w+)\)", (ROOT / "runtime/src/algorithms.def").read_text(), re.M
    )
    assert "rcl" in names and "fc" in names, names
    others = [n for n in names if n != "posix"]
    # "spin" is also the waiting policy's word (lt_spin_check, the spin budget): only its table
    prefixes = [n for n in others if n != "spin"]
    tables, functions = "|".join(others), "|".join(prefixes)
    word = re.compile(rf"\b(?:lt_algo_(?:{tables})|(?:lt_)?(?:{functions})_\w+)\b")
    offenders = []
    for f in tracked("runtime/src/*.c", "runtime/src/*.h"):
        if "/" in f[len("runtime/src/") :]:
            continue  # runtime/src/algo/, runtime/src/rcl/: the algorithms themselves
        text = re.sub(r"/\*.*?\*/|//[^\n]*", "", (ROOT / f).read_text(), flags=re.S)
        for lineno, line in enumerate(text.splitlines(), 1):
            if m := word.search(line):
                offenders.append(f"{f}:{lineno}: {m.group(0)}")
    assert not offenders, "generic runtime code naming an algorithm: " + ", ".join(offenders)


def _package_imports() -> dict[str, set[str]]:
    """Module -> the locktune modules it imports (at any level of the file)."""
    import ast

    mods: dict[str, set[str]] = {}
    for f in tracked("locktune/*.py", "locktune/**/*.py"):
        name = f[: -len(".py")].replace("/", ".").removesuffix(".__init__")
        deps: set[str] = set()
        for node in ast.walk(ast.parse((ROOT / f).read_text(), f)):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                deps.add(node.module)
                deps.update(f"{node.module}.{a.name}" for a in node.names)
            elif isinstance(node, ast.Import):
                deps.update(a.name for a in node.names)
        mods[name] = deps
    return {m: {d for d in deps if d in mods and d != m} for m, deps in mods.items()}


def test_the_package_has_no_import_circle_and_keeps_its_layers():
    """docs/architecture.md: commands -> stages (profiler, rewrite, bench, e2e) -> shared
    modules.  No circle among locktune's modules, and no shared module imports a stage."""
    graph = _package_imports()
    assert "locktune.rewrite.report" in graph and graph["locktune.cli"], graph.get("locktune.cli")
    state: dict[str, int] = {}
    circles: list[list[str]] = []

    def visit(m: str, path: list[str]) -> None:
        state[m] = 1
        for d in sorted(graph[m]):
            if state.get(d) == 1:
                circles.append(path[path.index(d) :] + [m, d] if d in path else [m, d])
            elif d not in state:
                visit(d, [*path, m])
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [])
    assert not circles, "import circles: " + "; ".join(" -> ".join(c) for c in circles)
    stages = ("locktune.profiler", "locktune.rewrite", "locktune.bench", "locktune.e2e")
    shared = ["algorithms", "machine", "native", "errors", "ui", "charts", "jsondoc"]
    upward = [
        f"locktune.{s} imports {d}"
        for s in shared
        for d in graph.get(f"locktune.{s}", ())
        if d.startswith(stages) or d.startswith("locktune.commands")
    ]
    assert not upward, "; ".join(upward)


def test_the_profiler_uses_its_own_prefix():
    """docs/development.md: `lt_` is the runtime's prefix, `ltp_` the profiler's (both libraries
    had an `lt_acquired`).  No `lt_`/`LT_` name in profiler/src."""
    import re

    name = re.compile(r"\b(?:lt|LT)_\w+")
    offenders = []
    for f in tracked("profiler/src/*.c", "profiler/src/*.h"):
        for lineno, line in enumerate((ROOT / f).read_text().splitlines(), 1):
            if m := name.search(line):
                offenders.append(f"{f}:{lineno}: {m.group(0)}")
    assert not offenders, "runtime prefix in the profiler: " + ", ".join(offenders[:10])
