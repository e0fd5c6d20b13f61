"""`locktune rewrite` as a user meets it: where output goes, what it refuses, what it says,
bad input, profiles, and running it again."""

from __future__ import annotations

import hashlib
import json
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from locktune.errors import LocktuneError
from locktune.rewrite import report

GOOD = """\
#include <pthread.h>
#include <stdio.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long n;

void bump(void)
{
    pthread_mutex_lock(&lock);
    n++;
    pthread_mutex_unlock(&lock);
}

int main(void)
{
    bump();
    printf("%ld\\n", n);
    return 0;
}
"""

BAD = """\
#include <pthread.h>

static pthread_mutex_t other = PTHREAD_MUTEX_INITIALIZER;

int broken(void)
{
    pthread_mutex_lock(&other)
    pthread_mutex_unlock(&other);
    return 0;
}
"""


def tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def digest(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".git" not in p.parts
    }


def extracted(text: str) -> bool:
    """GOOD's section, rewritten: run by lt_execute, no pthread mutex call left."""
    return "lt_execute(&lock, bump__cs1, NULL);" in text and "pthread_mutex" not in text


def one_error_line(res) -> str:
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr
    assert "Traceback" not in res.stderr
    return lines[0]


@pytest.fixture
def src(tmp_path):
    return tree(tmp_path / "src", {"main.c": GOOD})


def test_default_output_is_a_copy_next_to_the_tree(run_locktune, src):
    before = digest(src)
    res = run_locktune("rewrite", str(src))
    assert res.returncode == 0, res.stderr
    out = src.parent / "src-locktune"
    assert (out / "locktune_config.h").exists()
    assert extracted((out / "main.c").read_text())
    assert digest(src) == before, "the input tree was modified"


def test_summary_on_the_terminal(run_locktune, src, tmp_path):
    res = run_locktune("rewrite", str(src), "--out", str(tmp_path / "o"))
    assert res.returncode == 0, res.stderr
    assert "1 of 1 files rewritten" in res.stdout
    assert re.search(r"critical sections\s+1 found", res.stdout), res.stdout
    assert re.search(r"lock sites\s+1 in locktune_config.h \(1 posix\)", res.stdout), res.stdout


def test_report_schema(run_locktune, src, tmp_path):
    rep_path = tmp_path / "r.json"
    res = run_locktune("rewrite", str(src), "--out", str(tmp_path / "o"), "--report", str(rep_path))
    assert res.returncode == 0, res.stderr
    rep = report.read(rep_path)
    assert rep["schema"] == "locktune-rewrite/1"
    (sec,) = rep["critical_sections"]
    for key in ("file", "line", "end_lines", "function", "lock", "site", "status", "reason"):
        assert key in sec, key
    assert (sec["file"], sec["line"], sec["function"]) == ("main.c", 9, "bump")
    assert sec["site"] == "main.c:4"
    (site,) = rep["sites"]
    assert {k: site[k] for k in ("id", "file", "line", "algorithm", "server")} == {
        "id": 1,
        "file": "main.c",
        "line": 4,
        "algorithm": "posix",
        "server": -1,
    }


def test_report_read_names_the_file(tmp_path):
    """locktune.rewrite.report owns the document: reading something else is one error line
    naming the file, never a KeyError further on."""
    bad = tmp_path / "profile.json"
    bad.write_text('{"schema": "locktune-profile/3", "locks": []}')
    with pytest.raises(LocktuneError, match=r"profile.json: not a locktune rewrite report"):
        report.read(bad)
    broken = tmp_path / "half.json"
    broken.write_text('{"schema": "locktune-rewrite/1",\n "summary": ')
    with pytest.raises(LocktuneError, match=r"half.json:2: not JSON"):
        report.read(broken)
    partial = tmp_path / "partial.json"
    partial.write_text('{"schema": "locktune-rewrite/1", "summary": {}}')
    with pytest.raises(LocktuneError, match=r"without its `critical_sections` list"):
        report.read(partial)


def test_json_on_stdout(run_locktune, src, tmp_path):
    res = run_locktune("rewrite", str(src), "--out", str(tmp_path / "o"), "--json")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["schema"] == "locktune-rewrite/1"


def error_lines(res) -> list[str]:
    lines = res.stderr.strip().splitlines()
    assert "Traceback" not in res.stderr
    assert all(ln.startswith("locktune rewrite: error: ") for ln in lines), res.stderr
    return lines


def test_code_that_does_not_parse(run_locktune, tmp_path):
    """Nothing is written unless --keep-going; then the other files are rewritten and the
    one that does not parse is retargeted by token: one consistent program."""
    src = tree(tmp_path / "src", {"main.c": GOOD, "bad.c": BAD})
    out = tmp_path / "o"
    res = run_locktune("rewrite", str(src), "--out", str(out))
    assert res.returncode == 1, (res.stdout, res.stderr)
    line = one_error_line(res)
    assert re.match(r"locktune rewrite: error: bad\.c:7: .*", line), line
    assert "nothing written" in line
    assert not out.exists()
    assert "not analysed       bad.c:7:" in res.stdout

    res = run_locktune("rewrite", str(src), "--out", str(out), "--keep-going")
    assert res.returncode == 1, (res.stdout, res.stderr)
    assert re.match(r"locktune rewrite: error: bad\.c:7: ", one_error_line(res))
    bad = (out / "bad.c").read_text()
    assert "pthread_mutex" not in bad and "lt_mutex_lock(&other)" in bad, bad
    assert extracted((out / "main.c").read_text()), "the good file was lost"
    # Its section is in the report, kept: the share extracted counts it.
    assert "2 found, 1 extracted (50%)" in res.stdout, res.stdout


def test_header_that_does_not_parse(run_locktune, tmp_path):
    """The header and the files that include it are not analysed; the others are."""
    bad_h = "#include <pthread.h>\nstruct s { pthread_mutex_t m; int x }\n"
    user = '#include "bad.h"\nint f(struct s *p)\n{\n    return pthread_mutex_lock(&p->m);\n}\n'
    src = tree(tmp_path / "src", {"bad.h": bad_h, "user.c": user, "main.c": GOOD})
    out = tmp_path / "o"
    res = run_locktune("rewrite", str(src), "--out", str(out), "--keep-going")
    assert res.returncode == 1
    lines = error_lines(res)
    assert len(lines) == 2, lines
    assert re.match(r"locktune rewrite: error: bad\.h:2: expected ';'", lines[0]), lines
    assert lines[1].startswith(
        "locktune rewrite: error: user.c: includes bad.h, which does not parse"
    )
    assert "[2 file(s) not analysed" in lines[1]
    assert "lt_mutex_t m;" in (out / "bad.h").read_text()
    assert "lt_mutex_lock(&p->m)" in (out / "user.c").read_text()
    assert extracted((out / "main.c").read_text())
    assert "not analysed       user.c: includes bad.h, which does not parse" in res.stdout


def test_every_file_failing_is_named_and_fails(run_locktune, tmp_path):
    """Seen: every file failed to parse (in a header outside the tree) and the terminal said
    `none found`, exit 0."""
    tree(tmp_path / "inc", {"broken.h": "struct broken { int x }\n"})
    files = {
        f"f{i}.c": f'#include "{inc}"\n#include <pthread.h>\npthread_mutex_t m{i};\n'
        f"void f{i}(void)\n{{\n    pthread_mutex_lock(&m{i});\n    pthread_mutex_unlock(&m{i});\n}}\n"
        for i, inc in enumerate(["missing.h", "../inc/broken.h", "../inc/broken.h"])
    }
    src = tree(tmp_path / "src", files)
    res = run_locktune("rewrite", str(src), "--out", str(tmp_path / "o"), "--report",
                       str(tmp_path / "r.json"))  # fmt: skip
    assert res.returncode == 1, res.stdout + res.stderr
    lines = error_lines(res)
    assert len(lines) == 3, lines
    assert "f0.c:1: 'missing.h' file not found" in lines[0], lines
    for i in (1, 2):
        assert any(f"f{i}.c: " in ln and "broken.h:1: expected ';'" in ln for ln in lines), lines
    assert "none found" not in res.stdout
    assert "3 found, 0 extracted" in res.stdout, res.stdout
    rep = json.loads((tmp_path / "r.json").read_text())
    assert rep["summary"]["files_failed"] == 3
    assert rep["output"] is None
    assert {s["file"] for s in rep["critical_sections"]} == set(files)


NESTED = """\
#include <pthread.h>
#include "counter.h"

/* A GNU C nested function: gcc builds it, Clang cannot parse it. */
void counter_add_twice(struct counter *c)
{
    void add(void)
    {
        pthread_mutex_lock(&c->lock);
        c->n++;
        pthread_mutex_unlock(&c->lock);
    }
    add();
    add();
}
"""


def test_a_file_that_cannot_be_analysed_keeps_the_program_consistent(run_locktune, tmp_path):
    """Seen: a failed file kept its pthread calls while the shared header was retargeted; the
    tree compiled with warnings and deadlocked.  With --keep-going the output builds without
    a warning and runs correctly."""
    header = (
        "#ifndef COUNTER_H\n#define COUNTER_H\n#include <pthread.h>\n"
        "struct counter { pthread_mutex_t lock; long n; };\n"
        "void counter_add_twice(struct counter *c);\n#endif\n"
    )
    main = (
        '#include <stdio.h>\n#include "counter.h"\n'
        "static void *work(void *arg)\n{\n    struct counter *c = arg;\n"
        "    for (int i = 0; i < 10000; i++) {\n        counter_add_twice(c);\n"
        "        pthread_mutex_lock(&c->lock);\n        c->n--;\n"
        "        pthread_mutex_unlock(&c->lock);\n    }\n    return NULL;\n}\n"
        "int main(void)\n{\n    struct counter c = {.n = 0};\n"
        "    pthread_mutex_init(&c.lock, NULL);\n    pthread_t t[4];\n"
        "    for (int i = 0; i < 4; i++)\n        pthread_create(&t[i], NULL, work, &c);\n"
        "    for (int i = 0; i < 4; i++)\n        pthread_join(t[i], NULL);\n"
        '    printf("%ld\\n", c.n);\n    return 0;\n}\n'
    )
    src = tree(tmp_path / "src", {"counter.h": header, "nested.c": NESTED, "main.c": main})
    out = tmp_path / "o"
    res = run_locktune("rewrite", str(src), "--out", str(out), "--keep-going")
    assert res.returncode == 1, res.stdout + res.stderr
    assert any(ln.startswith("locktune rewrite: error: nested.c:") for ln in error_lines(res))
    assert "lt_mutex_t lock;" in (out / "counter.h").read_text()
    from locktune import native

    exe = tmp_path / "prog"
    cmd = ["gcc", "-O2", "-Wall", "-Wextra", "-Werror", "-o", str(exe), str(out / "main.c"),
           str(out / "nested.c"), *native.cflags(), *native.libs()]  # fmt: skip
    built = subprocess.run(cmd, capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    for algo in ("posix", "mcs"):
        ran = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60,
                             env={"LOCKTUNE_ALGO": f"default={algo}", "PATH": "/usr/bin:/bin"})  # fmt: skip
        assert ran.stdout == "40000\n", (algo, ran.stdout, ran.stderr)


def test_multi_folder_tree_with_a_generated_header(run_locktune, tmp_path):
    """Seen on an autotools tree: src/ reaches lib/'s generated config.h by -I../lib, lib/
    by -I.; every file failed with `cannot open file './config.h'`.  Built by its own
    Makefiles under bear, rewritten with that database, rebuilt, run."""
    src = tree(
        tmp_path / "pkg",
        {
            "Makefile": "all:\n\t$(MAKE) -C lib\n\t$(MAKE) -C src\n",
            "lib/config.h.in": "#define NTHREADS @N@\n",
            "lib/counter.h": "#include <pthread.h>\nextern pthread_mutex_t counter_lock;\n"
            "extern long counter;\nvoid counter_bump(void);\n",
            "lib/counter.c": '#include "config.h"\n#include "counter.h"\n'
            "pthread_mutex_t counter_lock = PTHREAD_MUTEX_INITIALIZER;\nlong counter;\n"
            "void counter_bump(void)\n{\n    pthread_mutex_lock(&counter_lock);\n"
            "    counter += NTHREADS;\n    pthread_mutex_unlock(&counter_lock);\n}\n",
            "lib/Makefile": "libcounter.a: counter.o\n\tar rcs $@ $^\n"
            "config.h: config.h.in\n\tsed 's/@N@/4/' config.h.in > config.h\n"
            "counter.o: counter.c config.h\n\tcc $(CPPFLAGS) -I. -c counter.c -o counter.o\n",
            "src/main.c": '#include <stdio.h>\n#include "config.h"\n#include "counter.h"\n'
            "static void *work(void *a)\n{\n    (void)a;\n"
            "    for (int i = 0; i < 1000; i++) {\n        pthread_mutex_lock(&counter_lock);\n"
            "        counter--;\n        pthread_mutex_unlock(&counter_lock);\n"
            "        counter_bump();\n    }\n    return NULL;\n}\n"
            "int main(void)\n{\n    pthread_t t[NTHREADS];\n"
            "    for (int i = 0; i < NTHREADS; i++)\n        pthread_create(&t[i], NULL, work, NULL);\n"
            "    for (int i = 0; i < NTHREADS; i++)\n        pthread_join(t[i], NULL);\n"
            '    printf("%ld\\n", counter);\n    return 0;\n}\n',
            "src/Makefile": "main: main.o ../lib/libcounter.a\n"
            "\tcc -o main main.o ../lib/libcounter.a -lpthread $(LDLIBS)\n"
            "main.o: main.c\n\tcc $(CPPFLAGS) -I../lib -c main.c -o main.o\n",
        },
    )
    built = subprocess.run(["bear", "--", "make"], cwd=src, capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    original = subprocess.run([str(src / "src" / "main")], capture_output=True, text=True)
    assert original.stdout == "12000\n"
    out = tmp_path / "out"
    res = run_locktune("rewrite", "--compile-commands", str(src / "compile_commands.json"),
                       "--out", str(out), str(src))  # fmt: skip
    assert res.returncode == 0, res.stdout + res.stderr
    assert "2 found, 2 extracted (100%)" in res.stdout, res.stdout
    from locktune import native

    for sub in ("lib", "src"):
        subprocess.run(["make", "-C", str(out / sub), "clean"], capture_output=True)
    for p in list(out.rglob("*.o")) + list(out.rglob("*.a")) + [out / "src" / "main"]:
        p.unlink(missing_ok=True)
    cppflags = " ".join(native.cflags())
    ldlibs = " ".join(native.libs())
    rebuilt = subprocess.run(["make", f"CPPFLAGS={cppflags}", f"LDLIBS={ldlibs}"], cwd=out,
                             capture_output=True, text=True)  # fmt: skip
    assert rebuilt.returncode == 0, rebuilt.stdout + rebuilt.stderr
    ran = subprocess.run([str(out / "src" / "main")], capture_output=True, text=True, timeout=60)
    assert ran.stdout == "12000\n", ran.stderr


def test_out_refuses_a_foreign_directory(run_locktune, src, tmp_path):
    foreign = tree(tmp_path / "mine", {"notes.txt": "keep me"})
    res = run_locktune("rewrite", str(src), "--out", str(foreign))
    assert res.returncode == 2
    assert "not the output of a previous locktune rewrite" in one_error_line(res)
    assert (foreign / "notes.txt").read_text() == "keep me"


def test_out_replaces_its_previous_output(run_locktune, src, tmp_path):
    out = tmp_path / "o"
    assert run_locktune("rewrite", str(src), "--out", str(out)).returncode == 0
    (out / "stale.c").write_text("int stale;\n")
    assert run_locktune("rewrite", str(src), "--out", str(out)).returncode == 0
    assert not (out / "stale.c").exists()


def test_out_inside_the_tree_is_refused(run_locktune, src):
    res = run_locktune("rewrite", str(src), "--out", str(src / "out"))
    assert res.returncode == 2
    assert "must not contain each other" in one_error_line(res)


@pytest.mark.parametrize(
    "args,message",
    [
        (["--in-place", "--out", "x"], "exclude each other"),
        (["--allow-dirty"], "only makes sense with --in-place"),
        (["--lock-wrapper", "item_lock"], "NAME=lock"),
        (["--lock-wrapper", "item_lock=grab"], "NAME=lock"),
    ],
)
def test_bad_usage(run_locktune, src, args, message):
    res = run_locktune("rewrite", *args, str(src))
    assert res.returncode == 2
    assert message in one_error_line(res)


def test_not_a_c_file(run_locktune, tmp_path):
    notes = tmp_path / "notes.md"
    notes.write_text("# notes\n")
    res = run_locktune("rewrite", str(notes))
    assert res.returncode == 2
    assert "not a C source or header" in one_error_line(res)


def _git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-C", str(root), *args],
        check=True,
        capture_output=True,
        env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
             "GIT_COMMITTER_EMAIL": "t@t", "HOME": str(root)},
    )  # fmt: skip


def test_in_place_needs_version_control(run_locktune, src):
    before = digest(src)
    res = run_locktune("rewrite", "--in-place", str(src))
    assert res.returncode == 2
    assert "not under git" in one_error_line(res)
    assert digest(src) == before


def test_in_place_on_a_clean_git_tree(run_locktune, src):
    _git(src, "init", "-q")
    _git(src, "add", ".")
    _git(src, "commit", "-qm", "x")
    res = run_locktune("rewrite", "--in-place", str(src))
    assert res.returncode == 0, res.stderr
    assert extracted((src / "main.c").read_text())
    assert (src / "locktune_config.h").exists()


def test_in_place_refuses_uncommitted_changes_unless_allowed(run_locktune, src):
    _git(src, "init", "-q")
    _git(src, "add", ".")
    _git(src, "commit", "-qm", "x")
    (src / "main.c").write_text(GOOD + "/* edited */\n")
    res = run_locktune("rewrite", "--in-place", str(src))
    assert res.returncode == 2
    assert "uncommitted changes (main.c)" in one_error_line(res)
    assert "pthread_mutex_lock" in (src / "main.c").read_text()
    res = run_locktune("rewrite", "--in-place", "--allow-dirty", str(src))
    assert res.returncode == 0, res.stderr
    assert extracted((src / "main.c").read_text())


def test_headers_and_subdirectories(run_locktune, tmp_path, cc):
    src = tree(
        tmp_path / "src",
        {
            "include/counter.h": "#ifndef COUNTER_H\n#define COUNTER_H\n#include <pthread.h>\n"
            "struct counter { pthread_mutex_t lock; long n; };\n"
            "void counter_add(struct counter *c);\n#endif\n",
            "lib/counter.c": '#include "counter.h"\n'
            "void counter_add(struct counter *c)\n{\n    pthread_mutex_lock(&c->lock);\n"
            "    c->n++;\n    pthread_mutex_unlock(&c->lock);\n}\n",
            "main.c": '#include <stdio.h>\n#include "counter.h"\n'
            "int main(void)\n{\n    struct counter c = {.n = 0};\n"
            "    pthread_mutex_init(&c.lock, NULL);\n    counter_add(&c);\n"
            '    printf("%ld\\n", c.n);\n    return 0;\n}\n',
        },
    )
    out = tmp_path / "o"
    res = run_locktune("rewrite", str(src), "--out", str(out), "--cflags", f"-I{src / 'include'}")
    assert res.returncode == 0, res.stdout + res.stderr
    assert '#include "../locktune_config.h"' in (out / "lib" / "counter.c").read_text()
    assert "lt_mutex_t lock;" in (out / "include" / "counter.h").read_text()
    assert "LT_SITE_MAIN_C_6" in (out / "main.c").read_text()
    from locktune import native

    exe = cc(
        tmp_path / "prog",
        out / "main.c",
        out / "lib" / "counter.c",
        flags=[f"-I{out / 'include'}", *native.cflags(), *native.libs()],
    )
    assert subprocess.run([str(exe)], capture_output=True, text=True).stdout == "1\n"


def test_compile_commands_give_the_flags(run_locktune, tmp_path):
    """A file that only parses with its real flags (-DWITH_LOCKS here)."""
    text = GOOD.replace(
        "static long n;", "#ifndef WITH_LOCKS\n#error needs WITH_LOCKS\n#endif\nstatic long n;"
    )
    src = tree(tmp_path / "src", {"main.c": text})
    res = run_locktune("rewrite", str(src), "--out", str(tmp_path / "o1"))
    assert res.returncode == 1
    assert "needs WITH_LOCKS" in one_error_line(res)
    db = tmp_path / "build" / "compile_commands.json"
    db.parent.mkdir()
    db.write_text(
        json.dumps(
            [
                {
                    "directory": str(src),
                    "file": str(src / "main.c"),
                    "command": f"cc -DWITH_LOCKS -c {shlex.quote(str(src / 'main.c'))}",
                }
            ]
        )
    )
    res = run_locktune(
        "rewrite", str(src), "--out", str(tmp_path / "o2"), "--compile-commands", str(db)
    )
    assert res.returncode == 0, res.stdout + res.stderr


PROFILE = {
    "schema": "locktune-profile/1",
    "meta": {"program": "./app", "pmu": {"available": False, "reason": "no PMU (VM)"}},
    "totals": {"cs_percent": 41.0},
    "locks": [
        {
            "site": {"file": "main.c", "line": 4, "symbol": "lock"},
            "kind": "mutex",
            "instances": 1,
            "acquisitions": 1000,
            "contended": 250,
            "trylock_failures": 0,
            "wait_ns": 1,
            "hold_ns": 1,
            "cs_ns": 1,
            "cs_percent": 40.5,
            "cond_waits": 0,
            "misses_per_cs": None,
            "locality_estimate": "+180 ns/CS",
            "recommendation": {"algorithm": "rcl", "reason": "hot, poor locality"},
        },
        {
            "site": {"file": "gone.c", "line": 9, "symbol": "old"},
            "kind": "mutex",
            "instances": 1,
            "acquisitions": 5,
            "contended": 0,
            "cs_percent": 0.1,
            "misses_per_cs": None,
            "recommendation": {"algorithm": "posix", "reason": "cold"},
        },
    ],
}


def test_profile_lands_in_the_header(run_locktune, src, tmp_path):
    prof = tmp_path / "profile.json"
    prof.write_text(json.dumps(PROFILE))
    out = tmp_path / "o"
    res = run_locktune("rewrite", str(src), "--out", str(out), "--profile", str(prof))
    assert res.returncode == 0, res.stderr
    header = (out / "locktune_config.h").read_text()
    assert "from profile.json" in header
    assert '{LT_SITE_MAIN_C_4, "main.c", 4, "lock", "rcl", 0},' in header
    assert "40.5% of thread time in critical sections" in header
    assert "25.0% of 1000 acquisitions contended" in header
    assert "Recommended: rcl (hot, poor locality)" in header
    assert "1 profiled site(s) not found in the sources: gone.c:9" in res.stdout
    # ...and an unmatched site is a warning the user sees, one line per site, on stderr.
    warnings = [ln for ln in res.stderr.splitlines() if "warning:" in ln]
    assert len(warnings) == 1 and "gone.c:9: profiled lock site matches no lock" in warnings[0]


def test_profiler_locality_estimate_in_words(run_locktune, src, tmp_path):
    """The profiler writes the estimate as an object: the header says it in words."""
    doc = json.loads(json.dumps(PROFILE))
    doc["locks"][0]["locality_estimate"] = {
        "extra_ns_per_cs": 212.4,
        "remote_fraction": 0.4,
        "label": "estimate",
        "reason": None,
    }
    prof = tmp_path / "profile.json"
    prof.write_text(json.dumps(doc))
    out = tmp_path / "o"
    res = run_locktune("rewrite", str(src), "--out", str(out), "--profile", str(prof))
    assert res.returncode == 0, res.stderr
    text = re.sub(r"\n\s*\* ?", " ", (out / "locktune_config.h").read_text())
    header = " ".join(text.split())
    assert "locality estimate +212 ns per section when the lock comes from another thread" in header
    assert "remote_fraction" not in header


def test_bad_profile(run_locktune, src, tmp_path):
    prof = tmp_path / "profile.json"
    prof.write_text(json.dumps({"schema": "something-else/1"}))
    res = run_locktune("rewrite", str(src), "--out", str(tmp_path / "o"), "--profile", str(prof))
    assert res.returncode == 1
    assert "not a locktune profile" in one_error_line(res)
    prof.write_text("{ not json")
    res = run_locktune("rewrite", str(src), "--out", str(tmp_path / "o"), "--profile", str(prof))
    assert res.returncode == 1
    assert re.search(r"profile\.json:1: not JSON", one_error_line(res))


def test_second_run_keeps_the_header_and_the_users_edits(run_locktune, src, tmp_path):
    prof = tmp_path / "profile.json"
    prof.write_text(json.dumps(PROFILE))
    first, second, third = tmp_path / "o1", tmp_path / "o2", tmp_path / "o3"
    assert (
        run_locktune("rewrite", str(src), "--out", str(first), "--profile", str(prof)).returncode
        == 0
    )
    assert run_locktune("rewrite", str(first), "--out", str(second)).returncode == 0
    assert digest(first) == digest(second)
    header = second / "locktune_config.h"
    header.write_text(header.read_text().replace('"rcl", 0}', '"mcs", -1}'))
    assert run_locktune("rewrite", str(second), "--out", str(third)).returncode == 0
    assert '"lock", "mcs", -1},' in (third / "locktune_config.h").read_text()
    assert digest(second) == digest(third)


def test_wrapper_accessors_follow_each_definition(run_locktune, tmp_path, cc):
    """A wrapper defined twice, for two programs (memcached's STATS_LOCK in thread.c and an
    empty one in testapp.c): each definition gets its accessor, each program links its own."""
    src = tree(
        tmp_path / "src",
        {
            "stats.h": "void STATS_LOCK(void);\nvoid STATS_UNLOCK(void);\n",
            "real.c": '#include <pthread.h>\n#include "stats.h"\n'
            "static pthread_mutex_t stats_lock = PTHREAD_MUTEX_INITIALIZER;\n"
            "void STATS_LOCK(void)\n{\n    pthread_mutex_lock(&stats_lock);\n}\n"
            "void STATS_UNLOCK(void)\n{\n    pthread_mutex_unlock(&stats_lock);\n}\n",
            "stub.c": '#include "stats.h"\nvoid STATS_LOCK(void) {}\nvoid STATS_UNLOCK(void) {}\n',
            "user.c": '#include <stdio.h>\n#include "stats.h"\nstatic long hits;\n'
            "int main(void)\n{\n    for (int i = 0; i < 3; i++) {\n        STATS_LOCK();\n"
            '        hits++;\n        STATS_UNLOCK();\n    }\n    printf("%ld\\n", hits);\n'
            "    return 0;\n}\n",
        },
    )
    out = tmp_path / "o"
    rep_path = tmp_path / "r.json"
    res = run_locktune(
        "rewrite", str(src), "--out", str(out), "--report", str(rep_path),
        "--lock-wrapper", "STATS_LOCK=lock", "--lock-wrapper", "STATS_UNLOCK=unlock",
    )  # fmt: skip
    assert res.returncode == 0, res.stdout + res.stderr
    rep = json.loads(rep_path.read_text())
    (acc,) = rep["lock_accessors"]
    assert acc["name"] == "lt_lock_of_STATS_LOCK"
    assert sorted((d["file"], d["lock"]) for d in acc["definitions"]) == [
        ("real.c", "&stats_lock"),
        ("stub.c", None),
    ]
    assert "lt_execute(lt_lock_of_STATS_LOCK(), " in (out / "user.c").read_text()
    from locktune import native

    link = [f"-I{out}", *native.cflags(), *native.libs()]
    for impl in ("real.c", "stub.c"):
        exe = cc(tmp_path / impl.replace(".c", ""), out / "user.c", out / impl, flags=link)
        res = subprocess.run([str(exe)], capture_output=True, text=True)
        assert res.stdout == "3\n", (impl, res.stdout, res.stderr)


CAST = """\
#include <pthread.h>
#include <stdio.h>

static pthread_mutex_t lock;
static pthread_mutex_t zeroed;
static long n;

static void *work(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&lock);
    n++;
    pthread_mutex_unlock(&lock);
    pthread_mutex_lock(&zeroed);
    n += 10;
    pthread_mutex_unlock(&zeroed);
    return NULL;
}

int main(void)
{
    pthread_t t;
    pthread_mutex_init(&lock, NULL);
    if (pthread_create(&t, NULL, (void * (*)(void *))(work), NULL) != 0)
        return 1;
    pthread_join(t, NULL);
    printf("%ld\\n", n);
    return 0;
}
"""


def test_a_construct_coccinelle_fails_on_falls_back_to_tokens(run_locktune, tmp_path, cc):
    """Coccinelle stops on the cast to a function-pointer type with `parenType`: the file is
    still rewritten (by token), with a note naming where spatch failed."""
    src = tree(tmp_path / "src", {"main.c": CAST})
    out = tmp_path / "o"
    rep_path = tmp_path / "r.json"
    res = run_locktune("rewrite", str(src), "--out", str(out), "--report", str(rep_path))
    assert res.returncode == 0, res.stdout + res.stderr
    # the function that holds the cast begins on line 20
    assert re.search(r"note: main\.c:20: spatch \(\w+\) failed .*retargeted by token", res.stdout)
    rep = json.loads(rep_path.read_text())
    (note,) = rep["notes"]
    assert (note["file"], note["line"]) == ("main.c", 20)
    (f,) = rep["files"]
    assert (f["status"], f["retargeted_by"]) == ("rewritten", "token")
    assert sorted((s["line"], s["kind"]) for s in rep["sites"]) == [(5, "static"), (23, "init")]
    text = (out / "main.c").read_text()
    assert "pthread_mutex" not in text
    assert "lt_mutex_init(&lock, NULL, LT_SITE_MAIN_C_23)" in text
    assert "static lt_mutex_t zeroed = LT_MUTEX_INITIALIZER(LT_SITE_MAIN_C_5);" in text
    from locktune import native

    exe = cc(
        tmp_path / "prog", out / "main.c", flags=[f"-I{out}", *native.cflags(), *native.libs()]
    )
    assert subprocess.run([str(exe)], capture_output=True, text=True).stdout == "11\n"


IDEMPOTENT = {
    "main.c": """\
#include <pthread.h>
#include <stdio.h>

#include "queue.h"

static pthread_mutex_t total_lock = PTHREAD_MUTEX_INITIALIZER;
static long total;

static void add(long v)
{
    pthread_mutex_lock(&total_lock);
    total += v;
    pthread_mutex_unlock(&total_lock);
}

static void add_maybe(long v, int locked)
{
    if (locked)
        pthread_mutex_lock(&total_lock);
    total += v;
    if (locked)
        pthread_mutex_unlock(&total_lock);
}

int main(void)
{
    struct queue q;
    queue_init(&q);
    queue_push(&q, 3);
    add(queue_pop(&q));
    add_maybe(1, 1);
    printf("%ld\\n", total);
    return 0;
}
""",
    "queue.h": """\
#include <pthread.h>
struct queue {
    pthread_mutex_t lock;
    long items[8];
    int n;
};
void queue_init(struct queue *q);
void queue_push(struct queue *q, long v);
long queue_pop(struct queue *q);
""",
    "queue.c": """\
#include "queue.h"

void queue_init(struct queue *q)
{
    q->n = 0;
    pthread_mutex_init(&q->lock, NULL);
}

void queue_push(struct queue *q, long v)
{
    pthread_mutex_lock(&q->lock);
    q->items[q->n++] = v;
    pthread_mutex_unlock(&q->lock);
}

long queue_pop(struct queue *q)
{
    long v;
    pthread_mutex_lock(&q->lock);
    v = q->items[--q->n];
    pthread_mutex_unlock(&q->lock);
    return v;
}
""",
}


def _profile_for(sites: list[tuple[str, int, str]]) -> dict:
    locks = []
    for k, (file, line, algo) in enumerate(sites):
        locks.append(
            {
                "site": {"file": file, "line": line},
                "kind": "mutex",
                "instances": 1 + k,
                "acquisitions": 1000 * (k + 1),
                "contended": 100,
                "cs_percent": 20.0 + k,
                "misses_per_cs": None,
                "locality_estimate": {"extra_ns_per_cs": 150.0},
                "recommendation": {"algorithm": algo, "reason": "test"},
            }
        )
    return {"schema": "locktune-profile/1", "meta": {}, "totals": {}, "locks": locks}


def test_second_rewrite_is_byte_identical(run_locktune, tmp_path):
    """A rewrite of a rewritten tree, into a new folder or in place, with the same options
    (a profile included), writes exactly the same files, locktune_config.h included: its
    names, kinds, section counts, kept sections and profile comments are read back."""
    src = tree(tmp_path / "src", IDEMPOTENT)
    prof = tmp_path / "profile.json"
    prof.write_text(json.dumps(_profile_for([("main.c", 6, "rcl"), ("queue.c", 6, "mcs")])))
    out1, out2 = tmp_path / "out1", tmp_path / "out2"
    opts = ["--profile", str(prof)]
    res = run_locktune("rewrite", str(src), "--out", str(out1), *opts)
    assert res.returncode == 0, res.stdout + res.stderr
    header = (out1 / "locktune_config.h").read_text()
    assert "total_lock (static initialiser)" in header
    assert "q->lock (pthread_mutex_init)" in header
    assert "2 critical sections: 1 extracted, 1 kept" in " ".join(
        re.sub(r"\n\s*\* ?", " ", header).split()
    )
    res = run_locktune("rewrite", str(out1), "--out", str(out2), *opts)
    assert res.returncode == 0, res.stdout + res.stderr
    assert digest(out2) == digest(out1)
    assert (out2 / "locktune_config.h").read_text() == header

    # in place, on a git copy of the rewritten tree
    copy = tmp_path / "copy"
    shutil.copytree(out1, copy)
    _git(copy, "init", "-q")
    _git(copy, "add", ".")
    _git(copy, "commit", "-qm", "x")
    res = run_locktune("rewrite", "--in-place", str(copy), *opts)
    assert res.returncode == 0, res.stdout + res.stderr
    assert digest(copy) == digest(out1)

    # without the profile the second time: the header keeps the first run's comments
    out3 = tmp_path / "out3"
    assert run_locktune("rewrite", str(out1), "--out", str(out3)).returncode == 0
    assert digest(out3) == digest(out1)


def test_rerun_with_a_profile_keeps_the_users_algorithm(run_locktune, tmp_path):
    """An algorithm the user chose in the header (not the one the profile recommended)
    survives a rerun with the profile; an entry left as recommended follows the profile."""
    src = tree(tmp_path / "src", IDEMPOTENT)
    prof = tmp_path / "profile.json"
    prof.write_text(json.dumps(_profile_for([("main.c", 6, "rcl"), ("queue.c", 6, "mcs")])))
    out1, out2 = tmp_path / "out1", tmp_path / "out2"
    assert (
        run_locktune("rewrite", str(src), "--out", str(out1), "--profile", str(prof)).returncode
        == 0
    )
    h = out1 / "locktune_config.h"
    h.write_text(h.read_text().replace('"total_lock", "rcl", 0}', '"total_lock", "ccsynch", -1}'))
    prof.write_text(json.dumps(_profile_for([("main.c", 6, "rcl"), ("queue.c", 6, "ticket")])))
    res = run_locktune("rewrite", str(out1), "--out", str(out2), "--profile", str(prof))
    assert res.returncode == 0, res.stdout + res.stderr
    text = (out2 / "locktune_config.h").read_text()
    assert '"total_lock", "ccsynch", -1},' in text
    assert '"q->lock", "ticket", -1},' in text


def test_wrapper_functions_are_found_and_listed(run_locktune, tmp_path, cc):
    """Wrapper functions of another file, named by nobody: one whose lock is written with its
    parameter only (every file can name it), one that keeps statistics around its lock (not
    a wrapper: a section run by lt_execute would skip them; listed with the reason)."""
    src = tree(
        tmp_path / "src",
        {
            "obj.h": "#include <pthread.h>\nstruct obj { pthread_mutex_t lock; long n; };\n"
            "void obj_lock(struct obj *o);\nvoid obj_unlock(struct obj *o);\n"
            "void counted_lock(struct obj *o);\nextern long lock_count;\n",
            "obj.c": '#include "obj.h"\nlong lock_count;\n'
            "void obj_lock(struct obj *o)\n{\n    pthread_mutex_lock(&o->lock);\n}\n"
            "void obj_unlock(struct obj *o)\n{\n    pthread_mutex_unlock(&o->lock);\n}\n"
            "void counted_lock(struct obj *o)\n{\n    pthread_mutex_lock(&o->lock);\n"
            "    lock_count++;\n}\n",
            "main.c": '#include <stdio.h>\n#include "obj.h"\n'
            "static struct obj one = {PTHREAD_MUTEX_INITIALIZER, 0};\n"
            "int main(void)\n{\n    for (int i = 0; i < 3; i++) {\n        obj_lock(&one);\n"
            "        one.n += i;\n        obj_unlock(&one);\n    }\n    counted_lock(&one);\n"
            "    one.n++;\n    obj_unlock(&one);\n"
            '    printf("%ld %ld\\n", one.n, lock_count);\n    return 0;\n}\n',
        },
    )
    out, rep_path = tmp_path / "o", tmp_path / "r.json"
    res = run_locktune("rewrite", str(src), "--out", str(out), "--report", str(rep_path))
    assert res.returncode == 0, res.stdout + res.stderr
    assert re.search(r"lock wrappers\s+obj_lock, obj_unlock\n", res.stdout), res.stdout
    assert re.search(
        r"not a wrapper\s+counted_lock: obj.c:11: counted_lock\(\) does more than lock "
        r"\(line 14\)",
        res.stdout,
    ), res.stdout
    rep = json.loads(rep_path.read_text())
    assert rep["lock_wrappers"]["obj_lock"] == {
        "role": "lock",
        "origin": "obj.c:3",
        "kind": "function",
        "lock": "&o->lock",
    }
    assert "counted_lock" in rep["lock_wrappers_rejected"]
    main = (out / "main.c").read_text()
    assert "lt_execute(&(&one)->lock, main__cs1, &lt_cs1);" in main
    from locktune import native

    link = [*native.cflags(), *native.libs()]
    exe = cc(tmp_path / "app", out / "main.c", out / "obj.c", flags=link)
    res = subprocess.run([str(exe)], capture_output=True, text=True)
    assert res.stdout == "4 1\n", res.stdout + res.stderr


CONFIG_DEPENDENT = """\
#include <pthread.h>
#include <stdio.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long n;

#ifdef COUNT /* a history in the counting build, one value otherwise */
#define SEEN(h) ((h)[0])
#else
#define SEEN(h) (h)
#endif

void bump(void)
{
#ifdef COUNT
    long seen[2] = {0, 0};
#else
    long seen = 0;
#endif
    pthread_mutex_lock(&lock);
    n++;
    SEEN(seen) = n;
    pthread_mutex_unlock(&lock);
    printf("%ld\\n", SEEN(seen));
}

int main(void)
{
    bump();
    printf("%ld\\n", n);
    return 0;
}
"""


def test_a_file_built_twice_compiles_both_ways(run_locktune, tmp_path):
    """A file the build compiles with two commands (memcached and memcached-debug) is
    analysed with the first; its rewrite must compile with both: here the section's
    extraction would only compile without -DCOUNT (`seen` is copied back, and is an array
    there), so it is kept, and said."""
    src = tree(tmp_path / "src", {"main.c": CONFIG_DEPENDENT})
    db = tmp_path / "compile_commands.json"
    db.write_text(
        json.dumps(
            [
                {"directory": str(src), "file": "main.c", "arguments": ["cc", "-c", "main.c"]},
                {"directory": str(src), "file": "main.c",
                 "arguments": ["cc", "-DCOUNT", "-c", "main.c"]},
            ]
        )
    )  # fmt: skip
    out = tmp_path / "o"
    res = run_locktune("rewrite", "--compile-commands", str(db), "--out", str(out), str(src))
    assert res.returncode == 0, res.stdout + res.stderr
    assert "1 found, 0 extracted" in res.stdout, res.stdout
    assert "command #2 of 2" in res.stdout
    from locktune import native

    for defs in ([], ["-DCOUNT"]):
        cmd = ["cc", "-Wall", "-Wextra", "-Werror", *defs, "-o", str(tmp_path / "p"),
               str(out / "main.c"), *native.cflags(), *native.libs()]  # fmt: skip
        built = subprocess.run(cmd, capture_output=True, text=True)
        assert built.returncode == 0, (defs, built.stderr)


POINTER_IN_DEBUG = """\
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#ifdef DEBUG_THREADING /* zstd's debug threading: the mutex type is a pointer */
typedef pthread_mutex_t *my_mutex_t;
#define MY_INIT(m) (*(m) = malloc(sizeof(pthread_mutex_t)), pthread_mutex_init(*(m), NULL))
#define MY_LOCK(m) pthread_mutex_lock(*(m))
#define MY_UNLOCK(m) pthread_mutex_unlock(*(m))
#else
typedef pthread_mutex_t my_mutex_t;
#define MY_INIT(m) pthread_mutex_init((m), NULL)
#define MY_LOCK(m) pthread_mutex_lock((m))
#define MY_UNLOCK(m) pthread_mutex_unlock((m))
#endif

struct pool { my_mutex_t mutex; long n; };

static void bump(struct pool *p)
{
    MY_LOCK(&p->mutex);
    p->n++;
    MY_UNLOCK(&p->mutex);
}

int main(void)
{
    struct pool p = {.n = 0};
    MY_INIT(&p.mutex);
    for (int i = 0; i < 5; i++)
        bump(&p);
    printf("%ld\\n", p.n);
    return 0;
}
"""


def test_a_lock_whose_type_depends_on_the_configuration(run_locktune, tmp_path):
    """zstd: lib/common/pool.c is built for the library and, with DEBUGLEVEL=2, for the tests,
    where its mutex type is a pointer.  Analysed with the library's command, the section
    became `lt_execute((&p->mutex), ...)`, which the tests' command only warned about (an
    lt_mutex_t ** for an lt_mutex_t *): the tests ran the section on the wrong memory
    (poolTests: FAIL testOrder).  Conversions count as errors in the other commands' check:
    the section is kept, said, and both builds compile without warnings and print 5."""
    src = tree(tmp_path / "src", {"pool.c": POINTER_IN_DEBUG})
    db = tmp_path / "compile_commands.json"
    db.write_text(
        json.dumps(
            [
                {"directory": str(src), "file": "pool.c", "arguments": ["cc", "-c", "pool.c"]},
                {"directory": str(src), "file": "pool.c",
                 "arguments": ["cc", "-DDEBUG_THREADING", "-c", "pool.c"]},
            ]
        )
    )  # fmt: skip
    out = tmp_path / "o"
    res = run_locktune("rewrite", "--compile-commands", str(db), "--out", str(out), str(src))
    assert res.returncode == 0, res.stdout + res.stderr
    assert "1 found, 0 extracted" in res.stdout, res.stdout
    assert "command #2 of 2" in res.stdout
    from locktune import native

    for defs in ([], ["-DDEBUG_THREADING"]):
        exe = tmp_path / "p"
        cmd = ["cc", "-Wall", "-Werror", *defs, "-o", str(exe), str(out / "pool.c"),
               *native.cflags(), *native.libs()]  # fmt: skip
        built = subprocess.run(cmd, capture_output=True, text=True)
        assert built.returncode == 0, (defs, built.stderr)
        ran = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
        assert ran.stdout == "5\n", (defs, ran.stdout, ran.stderr)


WRAPPED_TWICE = """\
#include <pthread.h>
#include <stdio.h>

static pthread_mutex_t locks[4] = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER,
                                   PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER};
static long n[4];

void item_lock(unsigned i);
void item_unlock(unsigned i);

static void bump(unsigned i)
{
    item_lock(i);
    n[i % 4]++;
    item_unlock(i);
}

void item_lock(unsigned i) { pthread_mutex_lock(&locks[i % 4]); }
void item_unlock(unsigned i) { pthread_mutex_unlock(&locks[i % 4]); }

int main(void)
{
    for (unsigned i = 0; i < 8; i++)
        bump(i);
#ifdef DEBUG
    printf("debug ");
#endif
    printf("%ld\\n", n[0] + n[1] + n[2] + n[3]);
    return 0;
}
"""


def test_a_wrapped_lock_in_a_file_built_twice_is_extracted(run_locktune, tmp_path):
    """memcached (memcached and memcached-debug): a section behind a lock wrapper function
    reaches its lock through an accessor the rewriter declares later, an implicitly
    declared function in the text the other command checks; the stricter check (the zstd
    test above) refused that int and kept 146 of memcached's sections.  Extracted, and both
    builds run right."""
    src = tree(tmp_path / "src", {"main.c": WRAPPED_TWICE})
    db = tmp_path / "compile_commands.json"
    db.write_text(
        json.dumps(
            [
                {"directory": str(src), "file": "main.c", "arguments": ["cc", "-c", "main.c"]},
                {"directory": str(src), "file": "main.c",
                 "arguments": ["cc", "-DDEBUG", "-c", "main.c"]},
            ]
        )
    )  # fmt: skip
    out = tmp_path / "o"
    res = run_locktune("rewrite", "--compile-commands", str(db), "--out", str(out), str(src))
    assert res.returncode == 0, res.stdout + res.stderr
    assert "1 found, 1 extracted" in res.stdout, res.stdout
    from locktune import native

    for defs, want in (([], "8\n"), (["-DDEBUG"], "debug 8\n")):
        exe = tmp_path / "w"
        cmd = ["cc", "-Wall", *defs, "-o", str(exe), str(out / "main.c"),
               *native.cflags(), *native.libs()]  # fmt: skip
        built = subprocess.run(cmd, capture_output=True, text=True)
        assert built.returncode == 0, (defs, built.stderr)
        ran = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
        assert ran.stdout == want, (defs, ran.stdout, ran.stderr)


def test_sections_in_headers_are_listed(run_locktune, tmp_path):
    """Seen: a section in a header's static inline function was in no report and the terminal
    said `none found`.  It is listed, kept, with its function; a wrapper is not a section."""
    q_h = (
        "#include <pthread.h>\n#define Q_LOCK(q) pthread_mutex_lock(&(q)->m)\n"
        "struct q { pthread_mutex_t m; int n; };\n"
        "static inline void q_push(struct q *q)\n{\n    pthread_mutex_lock(&q->m);\n"
        "    q->n++;\n    pthread_mutex_unlock(&q->m);\n}\n"
    )
    main = (
        '#include <stdio.h>\n#include "q.h"\nint main(void)\n{\n    struct q q = {.n = 0};\n'
        "    pthread_mutex_init(&q.m, NULL);\n    q_push(&q);\n"
        '    printf("%d\\n", q.n);\n    return 0;\n}\n'
    )
    src = tree(tmp_path / "src", {"q.h": q_h, "main.c": main})
    rep = tmp_path / "r.json"
    res = run_locktune("rewrite", str(src), "--out", str(tmp_path / "o"), "--report", str(rep))
    assert res.returncode == 0, res.stdout + res.stderr
    assert "1 found, 0 extracted" in res.stdout, res.stdout
    (sec,) = json.loads(rep.read_text())["critical_sections"]
    assert (sec["file"], sec["line"], sec["function"], sec["status"]) == (
        "q.h",
        6,
        "q_push",
        "kept",
    )
    assert "in a header" in sec["reason"]


def test_declarations_and_headers_the_build_does_not_include_are_no_sections(
    run_locktune, tmp_path
):
    """Seen on memcached and libuv: the declarations of lock wrappers in headers
    (`void STATS_LOCK(void);`, `UV_EXTERN void uv_mutex_lock(uv_mutex_t *);`) were listed as
    8 and 1 kept sections "in a header", and libuv's Windows-only src/win/*-inl.h, which no
    file compiled on Linux includes, as 3 more: the extracted share was understated.  A name
    at file scope is declared, not called; a header no compiled file includes is not built."""
    files = {
        "q.h": (
            "#include <pthread.h>\n#ifdef __cplusplus\nextern \"C\" {\n#endif\n"
            "struct q { pthread_mutex_t m; int n; };\n"
            "void q_lock(struct q *q);\nvoid q_unlock(struct q *q);\n"
            "static inline void q_push(struct q *q)\n{\n    pthread_mutex_lock(&q->m);\n"
            "    q->n++;\n    pthread_mutex_unlock(&q->m);\n}\n"
            "static inline void q_lock_checked(struct q *q)\n{\n"
            "    int r = pthread_mutex_lock(&q->m);\n    (void)r;\n}\n"
            "static inline void q_unlock_checked(struct q *q)\n{\n"
            "    int r = pthread_mutex_unlock(&q->m);\n    (void)r;\n}\n"
            "#ifdef __cplusplus\n}\n#endif\n"
        ),
        "q.c": (
            '#include "q.h"\nvoid q_lock(struct q *q)\n{\n    pthread_mutex_lock(&q->m);\n}\n'
            "void q_unlock(struct q *q)\n{\n    pthread_mutex_unlock(&q->m);\n}\n"
        ),
        "main.c": (
            '#include <stdio.h>\n#include "q.h"\nint main(void)\n{\n'
            "    struct q q = {.n = 0};\n    pthread_mutex_init(&q.m, NULL);\n"
            "    q_lock(&q);\n    q.n++;\n    q_unlock(&q);\n    q_push(&q);\n"
            "    q_lock_checked(&q);\n    q.n++;\n    q_unlock_checked(&q);\n"
            '    printf("%d\\n", q.n);\n    return 0;\n}\n'
            '#ifdef _WIN32\n#include "win/w-inl.h"\n#endif\n'
        ),
        "win/w-inl.h": (
            '#include "../q.h"\nstatic inline void w_push(struct q *q)\n{\n'
            "    pthread_mutex_lock(&q->m);\n    q->n--;\n    pthread_mutex_unlock(&q->m);\n}\n"
        ),
        "win/w.c": '#include "w-inl.h"\nvoid w(struct q *q) { w_push(q); }\n',
    }
    src = tree(tmp_path / "src", files)
    db = tmp_path / "compile_commands.json"
    db.write_text(
        json.dumps(
            [
                {"directory": str(src), "file": f, "arguments": ["cc", "-c", f]}
                for f in ("q.c", "main.c")
            ]
        )
    )
    rep = tmp_path / "r.json"
    res = run_locktune(
        "rewrite", str(src), "--compile-commands", str(db), "--out", str(tmp_path / "o"),
        "--report", str(rep),
    )  # fmt: skip
    assert res.returncode == 0, res.stdout + res.stderr
    secs = json.loads(rep.read_text())["critical_sections"]
    counted = sorted(
        (s["file"], s["line"], s["status"]) for s in secs if s.get("kind") == "section"
    )
    # main.c's sections (through the wrappers) and q_push's, kept in its header: no
    # declaration of q.h (in its linkage block), no wrapper's own call, nothing of win/
    # (main.c includes it on Windows only)
    assert counted == [
        ("main.c", 7, "extracted"),
        ("main.c", 11, "extracted"),
        ("q.h", 10, "kept"),
    ], [(s["file"], s["line"], s["reason"]) for s in secs if s["status"] == "kept"]
    win = [s for s in secs if s["file"].startswith("win/")]
    assert win and all(s["kind"] == "not-built" for s in win), win
    assert "no file the build compiles includes this header" in win[0]["reason"], win
    assert "3 found, 2 extracted" in res.stdout, res.stdout


def test_relative_source_paths_in_several_folders(run_locktune, tmp_path):
    """Seen in zstd: lib/'s commands compile `.//common/debug.c`; a quoted include from it is
    looked up as `.//common/portability_macros.h`, a name Clang's shared file cache then
    believed to exist for a file compiled in another folder, where opening it failed: 71 files
    failed with `cannot open file`.  Here a/ compiles `.//common/x.c` (with its common/p.h),
    then b/ compiles `.//common/y.c`, whose "p.h" is a/'s, reached by -I."""
    body = (
        '#include <pthread.h>\n#include "p.h"\n#ifndef P_H\n#error no p.h\n#endif\n'
        "static pthread_mutex_t m_{d} = PTHREAD_MUTEX_INITIALIZER;\nlong n_{d};\n"
        "void bump_{d}(void)\n{{\n    pthread_mutex_lock(&m_{d});\n    n_{d}++;\n"
        "    pthread_mutex_unlock(&m_{d});\n}}\n"
    )
    src = tree(
        tmp_path / "src",
        {
            "a/common/p.h": "#define P_H 1\n",
            "a/common/x.c": body.format(d="a"),
            "b/common/y.c": body.format(d="b"),
        },
    )
    db = tmp_path / "compile_commands.json"
    db.write_text(
        json.dumps(
            [
                {"directory": str(src / "a"), "file": ".//common/x.c",
                 "arguments": ["cc", "-c", "-o", "x.o", ".//common/x.c"]},
                {"directory": str(src / "b"), "file": ".//common/y.c",
                 "arguments": ["cc", "-I../a/common", "-c", "-o", "y.o", ".//common/y.c"]},
            ]
        )
    )  # fmt: skip
    res = run_locktune("rewrite", "--compile-commands", str(db), "--out", str(tmp_path / "o"),
                       str(src))  # fmt: skip
    assert res.returncode == 0, res.stdout + res.stderr
    assert "2 found, 2 extracted" in res.stdout, res.stdout
