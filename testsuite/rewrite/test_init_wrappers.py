"""Init wrappers (issue 11, item 5: "init wrappers give each caller its own site"): a real
profile of the corpus program init_wrappers, taken before the rewrite, names the init call in
the wrapper's body (lockutil.h), where every lock the wrapper initialises is born.  After the
rewrite each caller has a site of its own; the profile of the wrapper's line goes to each of
them, and is not reported as a profiled site the rewrite could not find."""

from __future__ import annotations

import json
import shutil
import subprocess

from corpus_build import CORPUS

WRAPPER_INIT = ("lockutil.h", 13)  # my_mutex_init's pthread_mutex_init
CALLERS = [("main.c", 52), ("main.c", 54)]  # my_mutex_init(&checking.mutex), (&savings.mutex)


def test_a_profile_of_the_wrapper_goes_to_each_callers_site(run_locktune, tmp_path):
    src = tmp_path / "src"
    shutil.copytree(CORPUS / "init_wrappers", src)
    exe = tmp_path / "prog"
    cmd = ["cc", "-O2", "-g", "-pthread", "-o", str(exe), str(src / "main.c"), str(src / "pool.c")]
    subprocess.run(cmd, check=True)
    prof = tmp_path / "profile.json"
    res = run_locktune("profile", "-o", str(prof), "--source-root", str(src), "--", str(exe))
    assert res.returncode == 0, res.stderr
    profiled = {
        (lk["site"]["file"], lk["site"]["line"]) for lk in json.loads(prof.read_text())["locks"]
    }
    assert WRAPPER_INIT in profiled, profiled

    out, rep = tmp_path / "out", tmp_path / "rep.json"
    res = run_locktune(
        "rewrite", str(src), "--out", str(out), "--profile", str(prof), "--report", str(rep)
    )
    assert res.returncode == 0, res.stderr
    report = json.loads(rep.read_text())
    sites = {(s["file"], s["line"]): s for s in report["sites"]}
    for caller in CALLERS:
        assert caller in sites, sorted(sites)
        assert sites[caller]["profiled"], sites[caller]
        # both locks are struct account's field `mutex`: a lock's key is its field, so each
        # site counts the sections on either object's lock
        assert sites[caller]["sections"] == 2, sites[caller]
    assert WRAPPER_INIT not in sites
    assert "lockutil.h:13" not in report["profile_sites_not_found"]
    assert report["profile_sites_lost"] == []


def test_a_caller_that_cannot_be_analysed_keeps_the_wrapper_as_it_is(run_locktune, tmp_path):
    """A file Clang cannot parse lists none of its calls: had the init wrapper it calls been
    given a site parameter, its calls (retargeted by token with --keep-going) would have one
    argument too few.  The wrapper keeps its one site, a note names the file, and the output
    builds without a warning and runs."""
    header = (
        "#ifndef COUNTER_H\n#define COUNTER_H\n#include <pthread.h>\n"
        "struct counter { pthread_mutex_t lock; long n; };\n"
        "static inline int counter_init(struct counter *c)\n"
        "{\n    c->n = 0;\n    return pthread_mutex_init(&c->lock, NULL);\n}\n"
        "void counter_twice(void);\n#endif\n"
    )
    nested = (  # a GNU C nested function: gcc builds it, Clang cannot parse it
        '#include "counter.h"\nstatic struct counter other;\n'
        "void counter_twice(void)\n{\n    void add(void)\n    {\n"
        "        pthread_mutex_lock(&other.lock);\n        other.n++;\n"
        "        pthread_mutex_unlock(&other.lock);\n    }\n"
        "    if (!other.n)\n        counter_init(&other);\n    add();\n    add();\n}\n"
    )
    main = (
        '#include <stdio.h>\n#include "counter.h"\nstatic struct counter c;\n'
        "int main(void)\n{\n    counter_init(&c);\n    pthread_mutex_lock(&c.lock);\n"
        "    c.n++;\n    pthread_mutex_unlock(&c.lock);\n    counter_twice();\n"
        '    printf("%ld\\n", c.n);\n    return 0;\n}\n'
    )
    src = tmp_path / "src"
    src.mkdir()
    for name, text in (("counter.h", header), ("nested.c", nested), ("main.c", main)):
        (src / name).write_text(text)
    out, rep = tmp_path / "o", tmp_path / "rep.json"
    res = run_locktune("rewrite", str(src), "--out", str(out), "--keep-going", "--report", str(rep))
    assert res.returncode == 1, res.stdout + res.stderr
    assert "counter_init() initialises its caller's lock: nested.c may call it" in res.stdout
    assert "int lt_site" not in (out / "counter.h").read_text()
    from locktune import native

    exe = tmp_path / "prog"
    cmd = ["gcc", "-O2", "-Wall", "-Wextra", "-Werror", "-o", str(exe), str(out / "main.c"),
           str(out / "nested.c"), *native.cflags(), *native.libs()]  # fmt: skip
    built = subprocess.run(cmd, capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    ran = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert ran.stdout == "1\n", ran.stdout + ran.stderr


def test_a_callers_site_is_named_after_the_lock_it_gets():
    """The site's name in locktune_config.h is the lock the call initialises, as its caller
    would write it, not the argument (memcached's setup_thread(&threads[i]) initialises
    threads[i].stats.mutex; xz's mythread_mutex_init(&thr->mutex), thr->mutex)."""
    from locktune.rewrite.initwrappers import lock_name

    assert lock_name("&me->stats.mutex", "me", "&threads[i]") == "threads[i].stats.mutex"
    assert lock_name("mutex", "mutex", "&thr->mutex") == "thr->mutex"
    assert lock_name("&cq->lock", "cq", "me->ev_queue") == "me->ev_queue->lock"
    assert lock_name("&p->locks[i]", "p", "pool") == "pool->locks[i]"
    assert lock_name("", "", "&x") == "x"  # a macro made the init argument up


def test_static_wrappers_of_two_files_may_share_a_name(run_locktune, tmp_path):
    """Two files each define a static obj_init(); one also takes its address.  Each wrapper is
    judged by its own uses: a.c's gets a site parameter and its call a site, b.c's keeps its
    one site (its address is taken), and no call gets its neighbour's site argument too (both
    calls had two before: the output did not compile)."""
    wrapper = (
        "#include <pthread.h>\nstruct obj { pthread_mutex_t lock; long n; };\n"
        "static int obj_init(struct obj *o)\n{\n    o->n = 0;\n"
        "    return pthread_mutex_init(&o->lock, NULL);\n}\n"
    )
    use = (
        "static struct obj {v};\nlong {f}(void)\n{{\n    {init}(&{v});\n"
        "    pthread_mutex_lock(&{v}.lock);\n    {v}.n++;\n    pthread_mutex_unlock(&{v}.lock);\n"
        "    return {v}.n;\n}}\n"
    )
    src = tmp_path / "src"
    src.mkdir()
    (src / "a.c").write_text(wrapper + use.format(v="one", f="a_run", init="obj_init"))
    (src / "b.c").write_text(
        wrapper
        + "static int (*init_fn)(struct obj *) = obj_init;\n"
        + use.format(v="two", f="b_run", init="init_fn")
        + "#include <stdio.h>\nlong a_run(void);\nint main(void)\n{\n"
        + '    printf("%ld %ld\\n", a_run(), b_run());\n    return 0;\n}\n'
    )
    out = tmp_path / "o"
    res = run_locktune("rewrite", str(src), "--out", str(out))
    assert res.returncode == 0, res.stdout + res.stderr
    assert "note: b.c:6: obj_init() initialises its caller's lock: its address is taken" in (
        res.stdout
    )
    assert "note: a.c:" not in res.stdout, res.stdout
    assert "obj_init(&one, LT_SITE_A_C_11);" in (out / "a.c").read_text()
    assert "int lt_site" not in (out / "b.c").read_text()
    from locktune import native

    exe = tmp_path / "prog"
    cmd = ["gcc", "-O2", "-Wall", "-Wextra", "-Werror", "-o", str(exe), str(out / "a.c"),
           str(out / "b.c"), *native.cflags(), *native.libs()]  # fmt: skip
    built = subprocess.run(cmd, capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    ran = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert ran.stdout == "1 1\n", ran.stdout + ran.stderr
