"""One list of algorithms: the runtime's (runtime/src/algorithms.def), which the build writes to
share/locktune/algorithms.json from the registered tables, and which Python reads
(locktune/algorithms.py).  Every part that names an algorithm agrees with it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from locktune import algorithms
from locktune.bench import lockbench

ROOT = Path(__file__).resolve().parents[2]


def def_names() -> list[str]:
    text = (ROOT / "runtime" / "src" / "algorithms.def").read_text()
    return [i.replace("_", "-") for i in re.findall(r"^LT_ALGORITHM\((\w+)\)", text, re.M)]


def test_the_installed_list_is_the_runtimes():
    assert algorithms.names() == def_names()
    assert algorithms.server_based() == {"rcl"}
    assert {"rcl", "fc", "ccsynch", "dsmsynch", "oyama"} == algorithms.delegating()


def test_the_runtime_accepts_every_listed_name_and_refuses_others():
    names = algorithms.names()
    avail = lockbench.available(names, 2)
    assert sorted(avail.available) == sorted(names), avail.unavailable
    with pytest.raises(lockbench.RunFailed) as err:
        lockbench.run(["--mode", "info", "--lock", "lt"], env={"LOCKTUNE_ALGO": "default=lc"})
    assert f"(known: {', '.join(names)})" in str(err.value)


def test_a_profile_recommending_an_unknown_algorithm_is_refused(run_locktune, tmp_path):
    """`lc` was accepted by the rewriter's own copy of the list and refused by the runtime."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "main.c").write_text(
        "#include <pthread.h>\nstatic pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;\n"
        "int main(void)\n{\n    pthread_mutex_lock(&m);\n    pthread_mutex_unlock(&m);\n"
        "    return 0;\n}\n"
    )
    profile = tmp_path / "profile.json"
    profile.write_text(
        json.dumps(
            {
                "schema": "locktune-profile/1",
                "meta": {},
                "totals": {},
                "locks": [
                    {
                        "site": {"file": "main.c", "line": 2},
                        "kind": "mutex",
                        "recommendation": {"algorithm": "lc", "reason": "x"},
                    }
                ],
            }
        )
    )
    res = run_locktune("rewrite", str(src), "--out", str(tmp_path / "o"), "--profile", str(profile))
    assert res.returncode == 1, res.stdout + res.stderr
    assert "recommends unknown algorithm 'lc'" in res.stderr


def test_no_second_list_of_the_algorithms():
    """Issue 15: the algorithm names were written in five places (a Python module had a stray
    `lc` the runtime rejects).  A literal list of half of the runtime's names or more, in
    Python or CMake, is a second list: take algorithms.names() (Python) or the runtime's
    algorithms.def (CMake) instead.  A short selection (the five a program's tests run
    under) is not one."""
    import ast
    import subprocess

    known = set(def_names())
    files = subprocess.run(
        ["git", "ls-files", "*.py", "*CMakeLists.txt", "*.cmake"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    offenders = []
    for f in files:
        text = (ROOT / f).read_text()
        if f.endswith(".py"):
            for node in ast.walk(ast.parse(text, f)):
                if isinstance(node, ast.List | ast.Tuple | ast.Set):
                    words = {
                        e.value
                        for e in node.elts
                        if isinstance(e, ast.Constant) and isinstance(e.value, str)
                    }
                    if len(words & known) * 2 >= len(known):
                        offenders.append(f"{f}:{node.lineno}")
        else:
            for m in re.finditer(r"\(([^()]*)\)", text):
                words = set(re.findall(r"[a-z][a-z0-9-]*", m.group(1)))
                if len(words & known) * 2 >= len(known):
                    offenders.append(f"{f}:{text[: m.start()].count(chr(10)) + 1}")
    assert not offenders, "a second list of the algorithms: " + ", ".join(offenders)
