"""A big single translation unit for the rewriter's scale test (an amalgamation build, the
way SQLite and others ship): `generate(lines)` returns one C file of at least that many
lines.

It is a real program, not padding.  It is made of modules; each has the lock shapes a
library has (a struct with a lock, a condition variable and counters, initialised by
pthread_mutex_init and pthread_cond_init; a statically initialised lock or a zeroed static
one; lock/unlock sections, a condition wait, a trylock, an early return inside a section,
now and then a lock wrapper macro) and much more ordinary code around them (hash and mix
functions, tables, switches, loops over arrays, string formatting).  `main` runs THREADS
threads that call every module ROUNDS times, then prints one line per group of modules
and a total: the output does not depend on the schedule, so the original and the rewritten
program must print the same thing.

    python3 testsuite/rewrite/bigtu.py 250000 > big.c && cc -O0 -pthread big.c -o big

`generate_tree(files)` spreads the same modules over a tree of files (one module per file,
a header, main.c): the scale test's tree of 500 files.

    python3 testsuite/rewrite/bigtu.py --tree 500 DIR
"""

from __future__ import annotations

import sys
from pathlib import Path

THREADS = 4
ROUNDS = 3


def _ordinary(k: int) -> str:
    """The module's code without locks (about 150 lines)."""
    a, b, c = 2654435761 + k, 40503 + 7 * k, 97 + (k % 31)
    return f"""\
static const unsigned short m{k}_table[32] = {{
    {", ".join(str((k * 31 + i * 17) % 65521) for i in range(16))},
    {", ".join(str((k * 13 + i * 29) % 65521) for i in range(16, 32))},
}};

struct m{k}_point {{
    int x;
    int y;
    const char *label;
}};

static unsigned long m{k}_hash(const char *s, size_t n)
{{
    unsigned long h = {a}UL;
    for (size_t i = 0; i < n; i++) {{
        h ^= (unsigned char)s[i];
        h *= {b}UL;
        h ^= h >> 13;
    }}
    return h;
}}

static long m{k}_mix(long v)
{{
    long r = v;
    for (int i = 0; i < 4; i++) {{
        r = r * {c} + m{k}_table[(unsigned long)(r + i) & 31];
        r %= 1000003;
        if (r < 0)
            r = -r;
    }}
    return r;
}}

static int m{k}_classify(int v)
{{
    switch (v % 7) {{
    case 0:
        return v / 2;
    case 1:
        return v * 3 + 1;
    case 2:
    case 3:
        return v - {k % 5};
    case 4:
        return v ^ 0x5a;
    case 5: {{
        int t = v;
        while (t > 100)
            t /= 3;
        return t;
    }}
    default:
        return -v;
    }}
}}

static size_t m{k}_format(char *buf, size_t size, const struct m{k}_point *p)
{{
    int n = snprintf(buf, size, "%s(%d,%d)", p->label, p->x, p->y);
    if (n < 0)
        return 0;
    return (size_t)n < size ? (size_t)n : size - 1;
}}

static long m{k}_points(long seed)
{{
    struct m{k}_point pts[4] = {{
        {{ 1, 2, "a" }},
        {{ 3, 4, "b" }},
        {{ (int)(seed % 100), 6, "c" }},
        {{ 7, (int)(seed % 50), "d" }},
    }};
    char buf[64];
    long acc = 0;
    for (int i = 0; i < 4; i++) {{
        size_t n = m{k}_format(buf, sizeof buf, &pts[i]);
        acc += (long)(m{k}_hash(buf, n) % 1000);
        acc += m{k}_classify(pts[i].x + pts[i].y);
    }}
    return acc;
}}

static int m{k}_compare(const void *pa, const void *pb)
{{
    long x = *(const long *)pa;
    long y = *(const long *)pb;
    return (x > y) - (x < y);
}}

static long m{k}_median(long seed)
{{
    long v[9];
    for (int i = 0; i < 9; i++)
        v[i] = m{k}_mix(seed + i) % 997;
    qsort(v, 9, sizeof v[0], m{k}_compare);
    return v[4];
}}

static long m{k}_work(long seed)
{{
    long r = m{k}_mix(seed);
    r += m{k}_points(seed);
    r += m{k}_median(seed);
    if (r % 3 == 0)
        r /= 3;
    else if (r % 3 == 1)
        r = r * 2 + 1;
    else
        r -= 7;
    return r % 100000;
}}
"""


def _module(k: int, exported: bool = False) -> str:
    """One module: ordinary code plus its locks (about 220 lines).  `exported`: the four
    functions main calls are not static (the module is a file of a tree)."""
    ext = "" if exported else "static "
    wrapper = k % 10 == 3
    zeroed = k % 2 == 1
    stat_decl = (
        f"static pthread_mutex_t m{k}_stat_lock;"
        if zeroed
        else f"static pthread_mutex_t m{k}_stat_lock = PTHREAD_MUTEX_INITIALIZER;"
    )
    lock = f"M{k}_LOCK()" if wrapper else f"pthread_mutex_lock(&m{k}_st.lock)"
    unlock = f"M{k}_UNLOCK()" if wrapper else f"pthread_mutex_unlock(&m{k}_st.lock)"
    macros = (
        f"#define M{k}_LOCK() pthread_mutex_lock(&m{k}_st.lock)\n"
        f"#define M{k}_UNLOCK() pthread_mutex_unlock(&m{k}_st.lock)\n\n"
        if wrapper
        else ""
    )
    return f"""\
/* ---- module {k} ---------------------------------------------------------------- */

struct m{k}_state {{
    pthread_mutex_t lock;
    pthread_cond_t ready;
    long total;
    long items[8];
    int pending;
    int calls;
}};

static struct m{k}_state m{k}_st;
{stat_decl}
static long m{k}_stat_count;
static long m{k}_stat_sum;

{macros}{_ordinary(k)}
{ext}void m{k}_init(void)
{{
    pthread_mutex_init(&m{k}_st.lock, NULL);
    pthread_cond_init(&m{k}_st.ready, NULL);
}}

{ext}void m{k}_fini(void)
{{
    pthread_cond_destroy(&m{k}_st.ready);
    pthread_mutex_destroy(&m{k}_st.lock);
}}

static void m{k}_add(long v)
{{
    long h = m{k}_work(v);
    {lock};
    m{k}_st.total += h;
    m{k}_st.items[h & 7]++;
    m{k}_st.pending++;
    pthread_cond_signal(&m{k}_st.ready);
    {unlock};
}}

/* Every thread adds before it takes: a take never waits for good. */
static void m{k}_take(void)
{{
    {lock};
    while (m{k}_st.pending == 0)
        pthread_cond_wait(&m{k}_st.ready, &m{k}_st.lock);
    m{k}_st.pending--;
    m{k}_st.calls++;
    {unlock};
}}

static int m{k}_full(int limit)
{{
    pthread_mutex_lock(&m{k}_st.lock);
    if (m{k}_st.calls > limit) {{
        pthread_mutex_unlock(&m{k}_st.lock);
        return 1;
    }}
    m{k}_st.calls++;
    pthread_mutex_unlock(&m{k}_st.lock);
    return 0;
}}

static void m{k}_stat(long v)
{{
    pthread_mutex_lock(&m{k}_stat_lock);
    m{k}_stat_count++;
    m{k}_stat_sum += v % 1000;
    pthread_mutex_unlock(&m{k}_stat_lock);
}}

static void m{k}_stat_try(long v)
{{
    while (pthread_mutex_trylock(&m{k}_stat_lock) != 0)
        sched_yield();
    m{k}_stat_sum += v % 10;
    pthread_mutex_unlock(&m{k}_stat_lock);
}}

{ext}void m{k}_run(long id, int round)
{{
    long v = id * 1000 + round * 10 + {k};
    m{k}_add(v);
    m{k}_stat(v);
    if (m{k}_full(1000000))
        abort();
    m{k}_stat_try(v);
    m{k}_take();
}}

{ext}long m{k}_result(void)
{{
    long r = m{k}_st.total + m{k}_st.calls + m{k}_stat_count + m{k}_stat_sum;
    for (int i = 0; i < 8; i++)
        r += m{k}_st.items[i] * (i + 1);
    return r;
}}

"""


_HEAD = """\
/* A generated amalgamation (testsuite/rewrite/bigtu.py): {modules} modules. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

"""

_MAIN = """\
static void (*const runs[])(long, int) = {{
{runs}
}};
static void (*const inits[])(void) = {{
{inits}
}};
static void (*const finis[])(void) = {{
{finis}
}};
static long (*const results[])(void) = {{
{results}
}};

#define MODULES ((int)(sizeof runs / sizeof runs[0]))
#define THREADS {threads}
#define ROUNDS {rounds}

static void *worker(void *arg)
{{
    long id = (long)arg;
    for (int r = 0; r < ROUNDS; r++)
        for (int k = 0; k < MODULES; k++)
            runs[(k + id * 7) % MODULES](id, r);
    return NULL;
}}

int main(void)
{{
    pthread_t t[THREADS];
    for (int k = 0; k < MODULES; k++)
        inits[k]();
    for (long i = 0; i < THREADS; i++)
        if (pthread_create(&t[i], NULL, worker, (void *)i) != 0)
            return 1;
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    long total = 0, group = 0;
    for (int k = 0; k < MODULES; k++) {{
        long r = results[k]();
        total += r;
        group += r;
        if (k % 100 == 99 || k == MODULES - 1) {{
            printf("modules %d..%d: %ld\\n", k - k % 100, k, group);
            group = 0;
        }}
        finis[k]();
    }}
    printf("total %ld\\n", total);
    return 0;
}}
"""


def _tables(modules: int) -> str:
    def table(fmt: str) -> str:
        return "\n".join(f"    {fmt.format(k=k)}," for k in range(modules))

    return _MAIN.format(
        runs=table("m{k}_run"),
        inits=table("m{k}_init"),
        finis=table("m{k}_fini"),
        results=table("m{k}_result"),
        threads=THREADS,
        rounds=ROUNDS,
    )


def generate_tree(files: int) -> dict[str, str]:
    """A tree of `files` C files (path -> text): main.c and one module per other file, in
    folders of 50, with a header that declares what main calls."""
    modules = files - 1
    header = "".join(
        f"void m{k}_init(void);\nvoid m{k}_fini(void);\nvoid m{k}_run(long id, int round);\n"
        f"long m{k}_result(void);\n"
        for k in range(modules)
    )
    tree = {"include/modules.h": f"#ifndef MODULES_H\n#define MODULES_H\n{header}#endif\n"}
    head = _HEAD.format(modules=1)
    for k in range(modules):
        tree[f"src/part{k // 50}/m{k}.c"] = head + '#include "modules.h"\n\n' + _module(k, True)
    tree["src/main.c"] = (
        _HEAD.format(modules=modules) + '#include "modules.h"\n\n' + _tables(modules)
    )
    return tree


def _lines(text: str) -> int:
    return text.count("\n")


def generate(lines: int) -> str:
    """One C file of at least `lines` lines (see the module docstring)."""
    per_module = _lines(_module(0))
    tail = _lines(_MAIN.format(runs="", inits="", finis="", results="", threads=0, rounds=0))
    modules = max(1, -(-(lines - tail - 20) // (per_module + 4)))
    body = "".join(_module(k) for k in range(modules))
    text = _HEAD.format(modules=modules) + body + _tables(modules)
    return text + "/* padding */\n" * max(0, lines - _lines(text))


def write_tree(root: Path, files: int) -> list[str]:
    """generate_tree written under root; returns the .c files' paths relative to root."""
    out = []
    for rel, text in generate_tree(files).items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
        if rel.endswith(".c"):
            out.append(rel)
    return out


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--tree":  # --tree FILES DIR
        write_tree(Path(sys.argv[3]), int(sys.argv[2]))
    else:
        sys.stdout.write(generate(int(sys.argv[1]) if len(sys.argv) > 1 else 250_000))
