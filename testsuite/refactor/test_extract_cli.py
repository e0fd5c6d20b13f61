"""locktune-extract as a command: options, paths, the report's lock sites and keys, bad input."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent

SECTION = """#include <pthread.h>
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static int n;
void bump(void);
void bump(void)
{
    pthread_mutex_lock(&m);
    n++;
    pthread_mutex_unlock(&m);
}
"""


@pytest.fixture(scope="module")
def runtime_flags():
    """Compile flags for extracted code before the Coccinelle pass (lt_test.h, see there)."""
    return ["-std=gnu11", "-Wall", "-Wextra", "-Werror", "-pedantic", "-Wmissing-prototypes",
            "-include", str(HERE / "lt_test.h")]  # fmt: skip


def extract(native_dir, *args, cwd=None):
    return subprocess.run(
        [str(native_dir / "bin" / "locktune-extract"), *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
    )


def test_report_only_without_out_dir(native_dir, tmp_path):
    src = tmp_path / "a.c"
    src.write_text(SECTION)
    res = extract(native_dir, src, "--", "-std=gnu11")
    assert res.returncode == 0, res.stderr
    report = json.loads(res.stdout)
    assert report["schema"] == "locktune-extract/1"
    (cs,) = report["critical_sections"]
    assert (cs["status"], cs["extracted_function"], cs["file"]) == ("extracted", "bump__cs1", "a.c")
    assert report["summary"]["files_rewritten"] == []
    assert src.read_text() == SECTION  # the input is never touched
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.c"]


def test_out_dir_keeps_paths_relative_to_source_root(native_dir, tmp_path):
    (tmp_path / "src" / "sub").mkdir(parents=True)
    (tmp_path / "src" / "sub" / "b.c").write_text(SECTION)
    (tmp_path / "src" / "plain.c").write_text("int plain(void);\nint plain(void) { return 1; }\n")
    out, report_file = tmp_path / "out", tmp_path / "report.json"
    res = extract(
        native_dir,
        "--out-dir",
        out,
        "--source-root",
        tmp_path / "src",
        "--report",
        report_file,
        tmp_path / "src" / "sub" / "b.c",
        tmp_path / "src" / "plain.c",
        "--",
        "-std=gnu11",
    )
    assert res.returncode == 0, res.stderr
    assert res.stdout == ""
    report = json.loads(report_file.read_text())
    assert report["summary"]["files_rewritten"] == ["sub/b.c"]
    assert report["critical_sections"][0]["file"] == "sub/b.c"
    assert "lt_execute(&m, bump__cs1, NULL);" in (out / "sub" / "b.c").read_text()
    # A file with nothing to extract is not written.
    assert not (out / "plain.c").exists()


def test_file_that_does_not_parse_is_not_rewritten_and_nothing_else_is_lost(native_dir, tmp_path):
    good, bad = tmp_path / "good.c", tmp_path / "bad.c"
    good.write_text(SECTION)
    bad.write_text(SECTION.replace("n++;", "n++\n    int x = ;"))
    res = extract(native_dir, "--out-dir", tmp_path / "out", good, bad, "--", "-std=gnu11")
    assert res.returncode == 1
    report = json.loads(res.stdout)
    # One line per error, naming the file and the line.
    lines = res.stderr.strip().splitlines()
    assert lines and all(line.startswith("locktune-extract: bad.c:") for line in lines)
    assert {d["file"] for d in report["diagnostics"]} == {"bad.c"}
    assert all(d["line"] in (8, 9) for d in report["diagnostics"])
    assert not (tmp_path / "out" / "bad.c").exists()
    assert (tmp_path / "out" / "good.c").exists()
    assert [s["file"] for s in report["critical_sections"]] == ["good.c"]


def test_compile_commands(native_dir, tmp_path):
    src = tmp_path / "m.c"
    src.write_text(SECTION.replace("n++;", "n += STEP;"))
    db = [{"directory": str(tmp_path), "file": "m.c", "arguments": ["cc", "-DSTEP=2", "-c", "m.c"]}]
    (tmp_path / "compile_commands.json").write_text(json.dumps(db))
    res = extract(native_dir, "-p", tmp_path, "--out-dir", tmp_path / "out", src)
    assert res.returncode == 0, res.stderr
    assert "n += STEP;" in (tmp_path / "out" / "m.c").read_text()


def test_bad_lock_wrapper_is_a_usage_error(native_dir, tmp_path):
    src = tmp_path / "a.c"
    src.write_text(SECTION)
    for spec in ("item_lock", "item_lock=grab", "9x=lock", "f=lock:"):
        res = extract(native_dir, "--lock-wrapper", spec, src, "--", "-std=gnu11")
        assert res.returncode == 2, spec
        assert res.stderr.startswith("locktune-extract: error: --lock-wrapper"), res.stderr


def test_lock_wrapper_naming_a_lock_this_file_cannot_see(native_dir, tmp_path):
    """memcached's STATS_LOCK() takes a lock that is static in another file: kept, and why."""
    src = tmp_path / "items.c"
    src.write_text(
        "void STATS_LOCK(void);\nvoid STATS_UNLOCK(void);\nstatic long evictions;\n"
        "void evict(void);\nvoid evict(void)\n{\n    STATS_LOCK();\n    evictions++;\n"
        "    STATS_UNLOCK();\n}\n"
    )
    res = extract(
        native_dir,
        "--lock-wrapper",
        "STATS_LOCK=lock:&stats_lock",
        "--lock-wrapper",
        "STATS_UNLOCK=unlock:&stats_lock",
        src,
        "--",
        "-std=gnu11",
    )
    assert res.returncode == 0, res.stderr
    (cs,) = json.loads(res.stdout)["critical_sections"]
    assert cs["status"] == "kept"
    assert cs["wrapper"] == "STATS_LOCK"
    assert "'stats_lock' is not declared before evict()" in cs["reason"]
    # A function in the expression may come from a header the rewrite adds (locktune rewrite
    # declares its lock accessors in locktune_config.h): it is not required here.
    res = extract(
        native_dir,
        "--out-dir",
        tmp_path / "out",
        "--lock-wrapper",
        "STATS_LOCK=lock:lt_lock_of_STATS_LOCK()",
        "--lock-wrapper",
        "STATS_UNLOCK=unlock:lt_lock_of_STATS_LOCK()",
        src,
        "--",
        "-std=gnu11",
    )
    (cs,) = json.loads(res.stdout)["critical_sections"]
    assert cs["status"] == "extracted", cs["reason"]
    text = (tmp_path / "out" / "items.c").read_text()
    assert "lt_execute(lt_lock_of_STATS_LOCK(), evict__cs1, NULL);" in text
    # Without a lock expression the section is found all the same.
    res = extract(
        native_dir,
        "--lock-wrapper",
        "STATS_LOCK=lock",
        "--lock-wrapper",
        "STATS_UNLOCK=unlock",
        src,
        "--",
        "-std=gnu11",
    )
    (cs,) = json.loads(res.stdout)["critical_sections"]
    assert (cs["status"], cs["end_lines"]) == ("kept", [9])
    assert "name it with --lock-wrapper STATS_LOCK=lock:EXPR" in cs["reason"]


LOCKS = """#include <pthread.h>
#include <stdlib.h>
pthread_mutex_t shared_lock;                               /* 3: zeroed static storage */
static pthread_mutex_t stats_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t lru_locks[8];
static pthread_mutex_t *item_locks;
struct conn {
    pthread_mutex_t mutex;
};
void setup(struct conn *c);
void use(struct conn *c, pthread_mutex_t *m, int i);
void setup(struct conn *c)
{
    static pthread_mutex_t once = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
    pthread_mutex_t local;
    pthread_mutex_init(&c->mutex, NULL);
    pthread_mutex_init(&lru_locks[0], NULL);
    item_locks = calloc(4, sizeof(pthread_mutex_t));
    pthread_mutex_init(&item_locks[2], NULL);
    pthread_mutex_init(&local, NULL);
    pthread_mutex_lock(&once);
    pthread_mutex_unlock(&once);
    pthread_mutex_lock(&local);
    pthread_mutex_unlock(&local);
    pthread_mutex_destroy(&local);
}
void use(struct conn *c, pthread_mutex_t *m, int i)
{
    pthread_mutex_lock(&stats_lock);
    pthread_mutex_unlock(&stats_lock);
    pthread_mutex_lock(&c->mutex);
    pthread_mutex_unlock(&c->mutex);
    pthread_mutex_lock(&lru_locks[i]);
    pthread_mutex_unlock(&lru_locks[i]);
    pthread_mutex_lock(&item_locks[i]);
    pthread_mutex_unlock(&item_locks[i]);
    pthread_mutex_lock(m);
    pthread_mutex_unlock(m);
    pthread_mutex_lock(&shared_lock);
    pthread_mutex_unlock(&shared_lock);
    pthread_mutex_lock((pthread_mutex_t *)c);
    pthread_mutex_unlock((pthread_mutex_t *)c);
}
"""


def test_lock_sites_and_keys(native_dir, tmp_path):
    src = tmp_path / "locks.c"
    src.write_text(LOCKS)
    res = extract(native_dir, src, "--", "-std=gnu11", "-D_GNU_SOURCE")
    assert res.returncode == 0, res.stderr
    report = json.loads(res.stdout)
    sites = [(s["line"], s["kind"], s["name"], s["lock_key"]) for s in report["lock_sites"]]
    assert sites == [
        (3, "static", "shared_lock", "var:locks.c:shared_lock"),
        (4, "static", "stats_lock", "var:locks.c:stats_lock"),
        (5, "array", "lru_locks", "array:locks.c:lru_locks"),
        (14, "static", "once", "var:locks.c:setup.once"),
        (16, "init", "c->mutex", "field:conn.mutex"),
        (17, "init", "lru_locks[0]", "array:locks.c:lru_locks"),
        (19, "init", "item_locks[2]", "array:locks.c:item_locks"),
        (20, "init", "local", "var:locks.c:setup.local"),
    ]
    static = {s["name"]: s["initializer"] for s in report["lock_sites"] if s["kind"] != "init"}
    assert static["stats_lock"] == "PTHREAD_MUTEX_INITIALIZER"
    assert static["shared_lock"] is None
    keys = {s["line"]: s["lock_key"] for s in report["critical_sections"]}
    assert keys == {
        21: "var:locks.c:setup.once",
        23: "var:locks.c:setup.local",
        29: "var:locks.c:stats_lock",
        31: "field:conn.mutex",
        33: "array:locks.c:lru_locks",
        35: "array:locks.c:item_locks",
        37: "param:use.m",
        39: "var:locks.c:shared_lock",
        41: "unknown",
    }


def test_errno_header_added_when_carried_code_needs_it(native_dir, tmp_path, runtime_flags):
    """A section that calls strtol carries errno; a file without <errno.h> gets it."""
    src = tmp_path / "conv.c"
    src.write_text(
        "#include <pthread.h>\n#include <stdlib.h>\n\n"
        "static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;\n"
        "long conv(const char *s);\nlong conv(const char *s)\n{\n    long v;\n"
        "    pthread_mutex_lock(&m);\n    v = strtol(s, NULL, 10);\n"
        "    pthread_mutex_unlock(&m);\n    return v;\n}\n"
    )
    out = tmp_path / "out"
    res = extract(native_dir, "--out-dir", out, src, "--", "-std=gnu11")
    assert res.returncode == 0, res.stderr
    (cs,) = json.loads(res.stdout)["critical_sections"]
    assert cs["thread_identity"]["handling"] == "errno-carried"
    assert "strtol()" in cs["thread_identity"]["why"]
    text = (out / "conv.c").read_text()
    assert text.startswith("#include <pthread.h>\n#include <stdlib.h>\n#include <errno.h>\n")
    res = subprocess.run(
        ["cc", *runtime_flags, "-c", "-o", str(tmp_path / "conv.o"), str(out / "conv.c")],
        capture_output=True,
        text=True,
    )
    assert res.returncode == 0, res.stderr


def test_lock_wrapper_macro(native_dir, tmp_path):
    """A macro named with --lock-wrapper: the call it expands to takes the macro's role."""
    src = tmp_path / "m.c"
    src.write_text(
        "#include <pthread.h>\nstruct spin {\n    pthread_mutex_t m;\n};\n"
        "static struct spin s = {PTHREAD_MUTEX_INITIALIZER};\n"
        "void acquire(pthread_mutex_t *m);\nvoid release(pthread_mutex_t *m);\n"
        "#define LOCK(x) acquire(&(x)->m)\n#define UNLOCK(x) release(&(x)->m)\n"
        "static int n;\nint bump(void);\nint bump(void)\n{\n    LOCK(&s);\n    n++;\n"
        "    UNLOCK(&s);\n    return n;\n}\n"
    )
    res = extract(native_dir, src, "--", "-std=gnu11")
    assert json.loads(res.stdout)["critical_sections"] == []  # unnamed: not a lock
    out = tmp_path / "out"
    res = extract(
        native_dir,
        "--out-dir",
        out,
        "--lock-wrapper",
        "LOCK=lock",
        "--lock-wrapper",
        "UNLOCK=unlock",
        src,
        "--",
        "-std=gnu11",
    )
    assert res.returncode == 0, res.stderr
    (cs,) = json.loads(res.stdout)["critical_sections"]
    assert (cs["status"], cs["wrapper"], cs["lock"], cs["end_lines"]) == (
        "extracted",
        "LOCK",
        "LOCK(&s)",
        [16],
    )
    assert "lt_execute(&(&s)->m, bump__cs1, NULL);" in (out / "m.c").read_text()


CALLS_ELSEWHERE = """#include <pthread.h>
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static int n;
void note(int v);
void bump(void);
void bump(void)
{
    pthread_mutex_lock(&m);
    n++;
    note(n);
    pthread_mutex_unlock(&m);
}
"""

NOTE = """#include <pthread.h>
extern pthread_key_t key;
void note(int v);
static int *slot(void)
{
    return pthread_getspecific(key);
}
void note(int v)
{
    *slot() = v;
}
void quiet(void);
void quiet(void)
{
    note(1);
}
"""


def test_list_functions_gives_each_functions_facts_and_calls(native_dir, tmp_path):
    (tmp_path / "a.c").write_text(CALLS_ELSEWHERE)
    (tmp_path / "note.c").write_text(NOTE)
    res = extract(native_dir, "--list-functions", tmp_path / "a.c", tmp_path / "note.c", "--")
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["schema"] == "locktune-extract-functions/0"
    fns = {(f["file"], f["name"]): f for f in doc["functions"]}
    assert set(fns) == {
        ("a.c", "bump"),
        ("note.c", "slot"),
        ("note.c", "note"),
        ("note.c", "quiet"),
    }
    assert fns[("a.c", "bump")]["calls"] == ["note"]  # pthread calls are system functions
    assert fns[("a.c", "bump")]["on_caller"] == ""
    assert fns[("note.c", "slot")]["static"] is True
    assert fns[("note.c", "slot")]["on_caller"].startswith("calls pthread_getspecific() (line 6)")
    # followed within the file: note() reaches pthread_getspecific through slot()
    assert "in slot()" in fns[("note.c", "note")]["on_caller"]
    assert fns[("note.c", "note")]["line"] == 8


def test_callee_facts_make_a_section_run_on_its_caller(native_dir, tmp_path):
    (tmp_path / "a.c").write_text(CALLS_ELSEWHERE)
    facts = tmp_path / "facts.json"
    why = "depends on its thread: note() (note.c: calls pthread_getspecific() (line 6))"
    for given, handling in (({}, None), ({"on_caller": {"note": why}}, "on-caller")):
        facts.write_text(json.dumps(given))
        res = extract(native_dir, "--callee-facts", facts, tmp_path / "a.c", "--", "-std=gnu11")
        assert res.returncode == 0, res.stderr
        (cs,) = json.loads(res.stdout)["critical_sections"]
        assert cs["status"] == "extracted"
        text = json.dumps(cs)
        if handling is None:
            assert "on-caller" not in text
        else:
            assert "on-caller" in text
            assert "calls note() (line 10), which " + why in text


def test_bad_callee_facts_is_one_line_naming_the_file(native_dir, tmp_path):
    (tmp_path / "a.c").write_text(SECTION)
    facts = tmp_path / "facts.json"
    for content in ("{not json", '{"on_caller": []}', '{"wait": {"f": 3}}'):
        facts.write_text(content)
        res = extract(native_dir, "--callee-facts", facts, tmp_path / "a.c", "--")
        assert res.returncode == 2, content
        assert res.stderr.startswith(f"locktune-extract: {facts}:0: error: "), res.stderr
        assert len(res.stderr.strip().splitlines()) == 1
    res = extract(native_dir, "--callee-facts", tmp_path / "missing.json", tmp_path / "a.c", "--")
    assert res.returncode == 2 and "missing.json:0: error:" in res.stderr


WRAPPERS_H = """#include <assert.h>
#include <pthread.h>
typedef pthread_mutex_t my_mutex;
static inline void my_mutex_lock(my_mutex *mutex)
{
    int ret = pthread_mutex_lock(mutex);
    assert(ret == 0);
    (void)ret;
}
static inline void my_mutex_unlock(my_mutex *mutex)
{
    int ret = pthread_mutex_unlock(mutex);
    assert(ret == 0);
    (void)ret;
}
"""

WRAPPERS_C = """#include <pthread.h>
#include <stdlib.h>
#include "wrappers.h"
#define hashmask(n) ((1u << (n)) - 1)
static pthread_mutex_t item_locks[16];
static unsigned item_lock_hashpower = 4;
static long lock_count;
void item_lock(unsigned hv);
void item_unlock(unsigned hv);
int item_trylock(unsigned hv);
void counted_lock(pthread_mutex_t *m);
void maybe_lock(pthread_mutex_t *m, int on);
void item_lock(unsigned hv)
{
    pthread_mutex_lock(&item_locks[hv & hashmask(item_lock_hashpower)]);
}
void item_unlock(unsigned hv)
{
    if (pthread_mutex_unlock(&item_locks[hv & hashmask(item_lock_hashpower)]) != 0)
        abort();
}
int item_trylock(unsigned hv)
{
    int r = pthread_mutex_trylock(&item_locks[hv & hashmask(item_lock_hashpower)]);
    return r;
}
void counted_lock(pthread_mutex_t *m)
{
    pthread_mutex_lock(m);
    lock_count++;
}
void maybe_lock(pthread_mutex_t *m, int on)
{
    if (on)
        pthread_mutex_lock(m);
}
static void local_lock(void)
{
    static pthread_mutex_t mine = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&mine);
}
void section(void);
void section(void)
{
    pthread_mutex_lock(&item_locks[0]);
    lock_count++;
    pthread_mutex_unlock(&item_locks[0]);
    local_lock();
}
"""


def test_list_functions_finds_lock_wrappers(native_dir, tmp_path):
    """Functions that lock, unlock or try a lock for their caller, found without help
    (memcached's item_lock, xz-utils' static inline mythread_mutex_lock), and those that
    come close with the reason (statistics kept around the lock, a lock on some paths)."""
    (tmp_path / "wrappers.h").write_text(WRAPPERS_H)
    (tmp_path / "a.c").write_text(WRAPPERS_C)
    (tmp_path / "b.c").write_text(
        '#include "wrappers.h"\nint b(void);\nint b(void) { return 1; }\n'
    )
    res = extract(
        native_dir, "--list-functions", "--source-root", tmp_path, tmp_path / "a.c",
        tmp_path / "b.c", "--", "-std=gnu11",
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    listed = {w["name"]: w for w in json.loads(res.stdout)["lock_wrappers"]}
    # a header's static inline wrappers are listed once, however many files include it
    assert (
        sum(1 for w in json.loads(res.stdout)["lock_wrappers"] if w["name"] == "my_mutex_lock") == 1
    )
    found = {
        n: (w["role"], w["lock"], w["file"], w["static"]) for n, w in listed.items() if "role" in w
    }
    assert found == {
        "my_mutex_lock": ("lock", "mutex", "wrappers.h", True),
        "my_mutex_unlock": ("unlock", "mutex", "wrappers.h", True),
        "item_lock": ("lock", "&item_locks[hv & hashmask(item_lock_hashpower)]", "a.c", False),
        "item_unlock": ("unlock", "&item_locks[hv & hashmask(item_lock_hashpower)]", "a.c", False),
        "item_trylock": (
            "trylock",
            "&item_locks[hv & hashmask(item_lock_hashpower)]",
            "a.c",
            False,
        ),
    }
    assert listed["item_lock"]["line"] == 13
    why = {n: w["not_wrapper"] for n, w in listed.items() if "not_wrapper" in w}
    assert why["counted_lock"].startswith("counted_lock() does more than lock (line 30)")
    assert why["maybe_lock"] == "maybe_lock() makes its lock call (line 35) on some paths only"
    assert why["local_lock"].startswith("local_lock() locks through its local 'mine'")
    assert "section" not in listed  # a critical section, not a wrapper


def test_wrappers_with_checks_pair_in_their_file(native_dir, tmp_path):
    """In the file that defines them, wrappers with checks around their lock call are
    recognised by the extraction too: the section between their calls is extracted on the
    lock they take."""
    (tmp_path / "wrappers.h").write_text(WRAPPERS_H)
    (tmp_path / "c.c").write_text(
        '#include "wrappers.h"\nstruct obj { my_mutex m; long n; };\nvoid bump(struct obj *o);\n'
        "void bump(struct obj *o)\n{\n    my_mutex_lock(&o->m);\n    o->n++;\n"
        "    my_mutex_unlock(&o->m);\n}\n"
    )
    res = extract(native_dir, tmp_path / "c.c", "--", "-std=gnu11")
    assert res.returncode == 0, res.stderr
    secs = [
        s
        for s in json.loads(res.stdout)["critical_sections"]
        if s.get("kind", "section") == "section"
    ]
    (cs,) = secs
    assert (cs["function"], cs["status"], cs["lock"]) == (
        "bump",
        "extracted",
        "my_mutex_lock(&o->m)",
    )
