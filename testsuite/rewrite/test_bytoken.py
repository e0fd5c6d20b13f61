"""Retargeting by token (bytoken.py) against the semantic patches (cocci/).

On every input the patches are tested on (testsuite/cocci/*/input.c) and on every file of
the rewriter's corpus, `engine.retarget` by Coccinelle and by token must give the same text
and the same sites.  The differences docs/rewrite.md lists ("Coccinelle or tokens") are
tested as such below, so that a change in either path shows."""

from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
COCCI_CASES = HERE.parent / "cocci"
CASES = sorted(COCCI_CASES.glob("*/input.c")) + sorted(
    p for p in (HERE / "corpus").glob("*/*") if p.suffix in (".c", ".h")
)


def retarget(by: str, text: str, work: Path, rel: str = "input.c"):
    """(text, sites as (line, kind, name), notes) after engine.retarget(by=...)."""
    from locktune.rewrite import cocci, engine

    stage = work / by
    (stage / rel).parent.mkdir(parents=True, exist_ok=True)
    (stage / rel).write_text(text)
    st = engine.FileState(rel, text, text)
    passes = cocci.CocciPasses(workdir=work)
    try:
        engine.retarget(st, passes, stage, by)
    finally:
        passes.close()
    assert st.error is None
    assert st.retargeted_by == by, st.notes
    sites = sorted((s["line"], s["kind"], s["name"]) for s in st.sites)
    return st.text, sites


# Inputs Coccinelle cannot retarget, with its words: the engine falls back to tokens there
# (said in the report), so there is nothing to compare; the fallback itself is checked.
COCCI_FALLS_BACK = {
    # a lock call written in a macro that a `for` statement expands (issue 11's xz-utils shape)
    "for_lock_macro/main.c": "try to delete an expanded token",
}


@pytest.mark.parametrize("path", CASES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_same_as_coccinelle(path, tmp_path):
    text = path.read_text()
    why = COCCI_FALLS_BACK.get(f"{path.parent.name}/{path.name}")
    if why:
        from locktune.rewrite import cocci, engine

        st = engine.FileState("input.c", text, text)
        (tmp_path / "c").mkdir()
        (tmp_path / "c" / "input.c").write_text(text)
        passes = cocci.CocciPasses(workdir=tmp_path)
        try:
            engine.retarget(st, passes, tmp_path / "c", "coccinelle")
        finally:
            passes.close()
        said = [n["message"] if isinstance(n, dict) else n for n in st.notes]
        assert st.retargeted_by == "token" and any(why in n for n in said), st.notes
        return
    by_cocci = retarget("coccinelle", text, tmp_path)
    by_token = retarget("token", text, tmp_path)
    assert by_token[0] == by_cocci[0]
    assert by_token[1] == by_cocci[1]


def test_every_name_in_the_patches_is_retargeted_by_token(tmp_path):
    """Each name a patch or the residue pass knows, in code and in a macro body."""
    from locktune.rewrite import residue

    names = [*residue.RENAMES, *residue.INITIALIZERS]
    code = "".join(f"void *p{i} = (void *)&{n};\n" for i, n in enumerate(names))
    code += "".join(f"#define M{i} {n}\n" for i, n in enumerate(names))
    text, _sites = retarget("token", code, tmp_path)
    for n in names:
        assert n not in text


DIFFERENCES = """\
#include <pthread.h>
int unrelated = 3;
void reset(pthread_mutex_t *m, pthread_mutex_t *other_lock_with_a_long_name)
{
    *m = (pthread_mutex_t)PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_init(m, NULL), pthread_mutex_init(other_lock_with_a_long_name, NULL);
}
"""


def test_documented_differences(tmp_path):
    """docs/rewrite.md, "Coccinelle or tokens": an initialiser outside a declaration, and a
    line Coccinelle re-wraps past 80 columns."""
    c_text, c_sites = retarget("coccinelle", DIFFERENCES, tmp_path)
    t_text, t_sites = retarget("token", DIFFERENCES, tmp_path)
    # Coccinelle: the nearest declaration before it, whatever it declares; by token: its line
    assert (2, "static", "unrelated") in c_sites
    assert (5, "static", "?") in t_sites
    assert "*m = (lt_mutex_t)LT_MUTEX_INITIALIZER(LT_SITE_INPUT_C_5);" in t_text
    # Coccinelle re-wraps a line it makes longer than 80 columns
    assert len(c_text.splitlines()) > len(DIFFERENCES.splitlines())
    assert len(t_text.splitlines()) == len(DIFFERENCES.splitlines())
    assert "lt_mutex_init(other_lock_with_a_long_name, NULL, LT_SITE_INPUT_C_6);" in t_text


TESTED_NAMES = """\
#include <pthread.h>
#  if defined(PTHREAD_MUTEX_INITIALIZER) && \\
      defined(pthread_mutex_lock)
static pthread_mutex_t a = PTHREAD_MUTEX_INITIALIZER;
#  elif defined(PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP)
static pthread_mutex_t a = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
#endif
#ifdef PTHREAD_COND_INITIALIZER
#undef pthread_mutex_lock
#endif
#define LOCK(m) pthread_mutex_lock(m)
"""


@pytest.mark.parametrize("by", ["token", "coccinelle"])
def test_directives_that_test_a_name_keep_it(by, tmp_path):
    """`#if defined(PTHREAD_MUTEX_INITIALIZER)` (libmicrohttpd's mhd_locks.h), #ifdef, #elif
    and #undef name glibc's macros to ask about them: left as they are (retargeted, the #if
    did not parse), while the code and the macro bodies around them are retargeted."""
    text, _sites = retarget(by, TESTED_NAMES, tmp_path)
    lines = text.splitlines()
    for n in (1, 2, 4, 7, 8):  # the directive lines, a continuation line included
        assert TESTED_NAMES.splitlines()[n] in lines, text
    assert "static lt_mutex_t a = LT_MUTEX_INITIALIZER(LT_SITE_INPUT_C_4);" in lines
    assert "#define LOCK(m) lt_mutex_lock(m)" in lines
