"""`locktune rewrite` as a user meets it: where output goes, what it refuses, what it says,
bad input, profiles, and running it again."""

from __future__ import annotations

import hashlib
import json
import re
import shlex
import subprocess
from pathlib import Path

import pytest

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
    rep = json.loads(rep_path.read_text())
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


def test_json_on_stdout(run_locktune, src, tmp_path):
    res = run_locktune("rewrite", str(src), "--out", str(tmp_path / "o"), "--json")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["schema"] == "locktune-rewrite/1"


def test_code_that_does_not_parse(run_locktune, tmp_path):
    src = tree(tmp_path / "src", {"main.c": GOOD, "bad.c": BAD})
    out = tmp_path / "o"
    res = run_locktune("rewrite", str(src), "--out", str(out))
    assert res.returncode == 1, (res.stdout, res.stderr)
    line = one_error_line(res)
    assert re.match(r"locktune rewrite: error: bad\.c:7: .*", line), line
    assert "left unchanged" in line
    assert (out / "bad.c").read_text() == BAD, "the file that does not parse was modified"
    assert extracted((out / "main.c").read_text()), "the good file was lost"
    assert "not rewritten      bad.c:7:" in res.stdout


def test_header_that_does_not_parse(run_locktune, tmp_path):
    """The header and the files that include it stay as they are; the others are rewritten."""
    bad_h = "#include <pthread.h>\nstruct s { pthread_mutex_t m; int x }\n"
    user = '#include "bad.h"\nint f(struct s *p)\n{\n    return pthread_mutex_lock(&p->m);\n}\n'
    src = tree(tmp_path / "src", {"bad.h": bad_h, "user.c": user, "main.c": GOOD})
    out = tmp_path / "o"
    res = run_locktune("rewrite", str(src), "--out", str(out))
    assert res.returncode == 1
    line = one_error_line(res)
    assert re.match(r"locktune rewrite: error: bad\.h:2: expected ';'", line), line
    assert "(and 1 more file(s))" in line
    assert (out / "bad.h").read_text() == bad_h
    assert (out / "user.c").read_text() == user
    assert extracted((out / "main.c").read_text())
    assert "not rewritten      user.c: includes bad.h, which does not parse" in res.stdout


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
    from locktune.commands import flags

    exe = cc(
        tmp_path / "prog",
        out / "main.c",
        out / "lib" / "counter.c",
        flags=[f"-I{out / 'include'}", *flags.cflags(), *flags.libs()],
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
    from locktune.commands import flags

    link = [f"-I{out}", *flags.cflags(), *flags.libs()]
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
    from locktune.commands import flags

    exe = cc(tmp_path / "prog", out / "main.c", flags=[f"-I{out}", *flags.cflags(), *flags.libs()])
    assert subprocess.run([str(exe)], capture_output=True, text=True).stdout == "11\n"
