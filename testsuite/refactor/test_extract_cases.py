"""locktune-extract on the critical-section shapes of testsuite/refactor/cases/.

Each case is a multithreaded program (input.c) built around one or more shapes, with beside
it the exact rewritten text the tool must produce (expected.c, absent when the tool must
leave the file alone) and what the report must say about each section (expect.json).  For
every case:

1. the tool's output is compared with expected.c, byte for byte;
2. the report lists exactly the sections expect.json lists, with their status, reason,
   inputs, outputs, variables passed by pointer and thread-identity flags;
3. the original and the rewritten program are compiled with the flags memcached uses
   (-Wall -Wextra -Werror -pedantic -Wmissing-prototypes) and run; their outputs must be
   equal.  Until the Coccinelle pass retypes the locks, the rewritten program runs on
   lt_test.c, a test-only lt_execute for pthread mutexes that runs each section on a server
   thread (one per lock) unless its flags ask for the caller's thread, so a section that
   depends on its thread and is not marked gives a different output;
4. running the tool on its own output changes nothing.

LOCKTUNE_UPDATE_EXPECTED=1 rewrites expected.c from the tool's output (review the diff).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
CASES_DIR = HERE / "cases"
CASES = sorted(p for p in CASES_DIR.iterdir() if (p / "input.c").is_file())
STRICT = [
    "-std=gnu11",
    "-Wall",
    "-Wextra",
    "-Werror",
    "-pedantic",
    "-Wmissing-prototypes",
]


def extract(native_dir, *args, timeout=120):
    return subprocess.run(
        [str(native_dir / "bin" / "locktune-extract"), *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def compile_program(out: Path, source: Path, runtime: Path, flags: list[str]) -> Path:
    cmd = [
        "cc",
        "-O2",
        *flags,
        "-I",
        str(CASES_DIR),
        "-include",
        str(HERE / "lt_test.h"),
        "-o",
        str(out),
        str(source),
        str(runtime),
        "-pthread",
    ]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, f"{' '.join(cmd)}\n{res.stderr}"
    return out


def run_program(exe: Path, **env) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(exe)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "LT_TEST_REPORT": "1", **env},
    )


@pytest.fixture(scope="module")
def runtime(tmp_path_factory) -> Path:
    obj = tmp_path_factory.mktemp("lt_test") / "lt_test.o"
    cmd = ["cc", "-O2", "-std=gnu11", "-Wall", "-Wextra", "-Werror", "-c", "-o", str(obj)]
    res = subprocess.run([*cmd, str(HERE / "lt_test.c")], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    return obj


def check_report(report: dict, expected: list[dict]) -> None:
    got = {s["line"]: s for s in report["critical_sections"]}
    assert sorted(got) == sorted(e["line"] for e in expected), "sections found at lines " + str(
        sorted(got)
    )
    for e in expected:
        s = got[e["line"]]
        where = f"section at line {e['line']}"
        assert s["status"] == e["status"], f"{where}: {s['status']} ({s['reason']})"
        if e["status"] == "kept":
            assert e["reason"] in s["reason"], f"{where}: reason {s['reason']!r}"
            assert s["extracted_function"] is None
            continue
        assert s["reason"] is None
        for key in ("inputs", "outputs", "by_pointer", "flags", "locals", "end_lines"):
            if key in e:
                assert sorted(s[key]) == sorted(e[key]), f"{where}: {key} {s[key]}"
        handling = (s["thread_identity"] or {}).get("handling")
        assert handling == e.get("handling"), f"{where}: thread identity {s['thread_identity']}"
        for key in ("lock_key", "early_exits", "context"):
            if key in e:
                assert s[key] == e[key], f"{where}: {key} {s[key]}"


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name)
def test_case(case: Path, native_dir, tmp_path, runtime):
    spec = json.loads((case / "expect.json").read_text())
    flags = spec.get("cflags", STRICT)
    out = tmp_path / "out"
    res = extract(
        native_dir,
        "--out-dir",
        out,
        "--source-root",
        case,
        *spec.get("args", []),
        case / "input.c",
        "--",
        *flags,
        "-I",
        CASES_DIR,
    )
    assert res.returncode == 0, res.stderr
    report = json.loads(res.stdout)
    produced = out / "input.c"

    # 1. The text.
    expected = case / "expected.c"
    if os.environ.get("LOCKTUNE_UPDATE_EXPECTED") == "1":
        if produced.exists():
            expected.write_text(produced.read_text())
        elif expected.exists():
            expected.unlink()
    if expected.exists():
        assert produced.exists(), "the tool left the file unchanged"
        assert produced.read_text() == expected.read_text()
    else:
        assert not produced.exists(), "the tool changed a file it must leave alone"

    # 2. The report.
    check_report(report, spec["sections"])
    extracted = [s for s in report["critical_sections"] if s["status"] == "extracted"]
    assert report["summary"]["extracted"] == len(extracted)

    # 3. The rewritten program behaves as the original.
    original = compile_program(tmp_path / "original", case / "input.c", runtime, flags)
    want = run_program(original)
    assert want.returncode == spec.get("exit", 0), want.stderr
    if produced.exists():
        rewritten = compile_program(tmp_path / "rewritten", produced, runtime, flags)
        got = run_program(rewritten)
        assert (got.returncode, got.stdout) == (want.returncode, want.stdout), got.stderr
        # Sections that may be shipped were shipped: the comparison tested delegation.
        if any(not s["flags"] for s in extracted):
            assert "delegated=0 " not in got.stderr, got.stderr

        # 4. Idempotent: the output has nothing left to extract and is not rewritten again.
        again = extract(
            native_dir,
            "--out-dir",
            tmp_path / "again",
            produced,
            "--",
            *flags,
            "-I",
            CASES_DIR,
            "-include",
            HERE / "lt_test.h",
        )
        assert again.returncode == 0, again.stderr
        assert json.loads(again.stdout)["summary"]["extracted"] == 0
        assert not (tmp_path / "again" / "input.c").exists()
