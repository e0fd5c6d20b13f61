"""locktune-extract parses a translation unit with Clang and finds its lock calls."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

HERE = Path(__file__).resolve().parent


def extract(native_dir, *args):
    return subprocess.run(
        [str(native_dir / "bin" / "locktune-extract"), *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_lists_lock_calls_with_function_and_expression(native_dir):
    res = extract(native_dir, "--list", HERE / "inputs" / "calls.c", "--", "-std=gnu11")
    assert res.returncode == 0, res.stderr
    calls = [
        (c["line"], c["call"], c["lock"], c["function"]) for c in json.loads(res.stdout)["calls"]
    ]
    assert calls == [
        (12, "pthread_mutex_lock", "&global", "take"),
        (15, "pthread_mutex_unlock", "&global", "take"),
        (18, "pthread_mutex_unlock", "&global", "take"),
        (19, "pthread_mutex_trylock", "&q->mtx", "take"),
        (21, "pthread_mutex_unlock", "&q->mtx", "take"),
    ]


def test_uses_compile_commands(native_dir, tmp_path):
    """Flags come from compile_commands.json: a macro defined there selects the lock."""
    src = tmp_path / "m.c"
    src.write_text(
        "#include <pthread.h>\n"
        "pthread_mutex_t a, b;\n"
        "void f(void) { pthread_mutex_lock(&LOCK); pthread_mutex_unlock(&LOCK); }\n"
    )
    db = [{"directory": str(tmp_path), "file": "m.c", "arguments": ["cc", "-DLOCK=b", "-c", "m.c"]}]
    (tmp_path / "compile_commands.json").write_text(json.dumps(db))
    res = extract(native_dir, "--list", "-p", tmp_path, src)
    assert res.returncode == 0, res.stderr
    assert [c["call"] for c in json.loads(res.stdout)["calls"]] == [
        "pthread_mutex_lock",
        "pthread_mutex_unlock",
    ]
    # Without the database's -DLOCK=b the file does not compile: the flags were really used.
    res = extract(native_dir, src, "--", "-std=gnu11")
    assert res.returncode == 1


def test_parse_error_fails(native_dir, tmp_path):
    src = tmp_path / "bad.c"
    src.write_text("int f(void) { return 1 }\n")
    res = extract(native_dir, src, "--", "-std=gnu11")
    assert res.returncode == 1
    assert "bad.c:1" in res.stderr
