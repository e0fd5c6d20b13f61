"""Building the rewriter corpus: each program of corpus/ compiled as written, rewritten by
`locktune rewrite`, compiled again against liblocktune, and rewritten a second time (which
must change nothing, byte for byte, locktune_config.h included); the same pair of rewrites
again with a profile of every site.  Each program is compiled once and then run per algorithm.

Directives in a program's main.c (comments):

    // LOCKTUNE-ARGS: --lock-wrapper table_lock=lock     extra arguments for the rewrite
    // NEEDS: recursive                                    a runtime capability it relies on
    // KEPT: text                                          a section kept, its reason contains text
    // EXTRACTED: N                                        N sections extracted (with extraction)
    // ROTATED: N                                          N sections opened by a rotated loop
    // SITES: N                                            N sites in locktune_config.h
    // NOTE: text                                          a note of the report contains text
    // OTHER-CONFIG: -DX                                   the original and the rewritten program
                                                          compiled with these flags too print
                                                          the same (code #if left out)
    // CHECK...: see filecheck.py
"""

from __future__ import annotations

import filecmp
import json
import re
import shlex
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "corpus"
CFLAGS = ["-O1", "-g", "-Wall", "-Wextra", "-Werror", "-pthread"]
RUN_TIMEOUT_S = 60


def programs() -> list[str]:
    return sorted(d.name for d in CORPUS.iterdir() if (d / "main.c").exists())


def directives(name: str, key: str) -> list[str]:
    text = (CORPUS / name / "main.c").read_text()
    return [m.group(1).strip() for m in re.finditer(rf"//\s*{key}:(.*)$", text, re.MULTILINE)]


@dataclass
class Built:
    name: str
    src: Path
    out: Path
    orig_exe: Path | None = None
    new_exe: Path | None = None
    report: dict | None = None
    failure: str | None = None  # the first stage that failed, with its output
    second_run_diff: list[str] = field(default_factory=list)
    rewrite_seconds: float = 0.0
    # (flags, original, rewritten) compiled for each OTHER-CONFIG directive
    other_configs: list[tuple[str, Path, Path]] = field(default_factory=list)


def _run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, **kw)


def _sources(d: Path) -> list[str]:
    return sorted(str(p) for p in d.glob("*.c"))


def build(name: str, work: Path, locktune: str, flags: list[str]) -> Built:
    import time

    src = work / name / "src"
    out = work / name / "out"
    shutil.copytree(CORPUS / name, src)
    b = Built(name, src, out)
    orig = work / name / "orig"
    res = _run(["cc", *CFLAGS, *_sources(src), "-o", str(orig)])
    if res.returncode != 0:
        b.failure = f"original does not compile:\n{res.stderr}"
        return b
    b.orig_exe = orig
    extra = [a for line in directives(name, "LOCKTUNE-ARGS") for a in shlex.split(line)]
    t0 = time.monotonic()
    res = _run(
        [locktune, "rewrite", str(src), "--out", str(out), "--report", str(work / name / "r.json")]
        + extra
    )
    b.rewrite_seconds = time.monotonic() - t0
    if res.returncode != 0:
        b.failure = f"locktune rewrite exited {res.returncode}:\n{res.stdout}\n{res.stderr}"
        return b
    b.report = json.loads((work / name / "r.json").read_text())
    new = work / name / "new"
    res = _run(["cc", *CFLAGS, *_sources(out), *flags, "-o", str(new)])
    if res.returncode != 0:
        b.failure = f"rewritten program does not compile:\n{res.stderr}"
        return b
    b.new_exe = new
    for k, line in enumerate(directives(name, "OTHER-CONFIG")):
        other = shlex.split(line)
        pair = (work / name / f"orig-other{k}", work / name / f"new-other{k}")
        for sources, exe, more in ((src, pair[0], []), (out, pair[1], flags)):
            res = _run(["cc", *CFLAGS, *other, *_sources(sources), *more, "-o", str(exe)])
            if res.returncode != 0:
                b.failure = f"{exe.name} ({line}) does not compile:\n{res.stderr}"
                return b
        b.other_configs.append((line, *pair))
    again = work / name / "again"
    res = _run([locktune, "rewrite", str(out), "--out", str(again)] + extra)
    if res.returncode != 0:
        b.failure = f"second rewrite exited {res.returncode}:\n{res.stdout}\n{res.stderr}"
        return b
    b.second_run_diff = _diff(out, again)
    # The same with a profile, as a user reruns the whole command: the header's comments
    # are then written again from what the rewritten tree and the previous header say.
    profile = work / name / "profile.json"
    profile.write_text(json.dumps(synthetic_profile(b.report)))
    with_profile = ["--profile", str(profile)] + extra
    profiled, profiled_again = work / name / "out-profiled", work / name / "again-profiled"
    for tree, dest in ((src, profiled), (profiled, profiled_again)):
        res = _run([locktune, "rewrite", str(tree), "--out", str(dest)] + with_profile)
        if res.returncode != 0:
            b.failure = (
                f"rewrite of {tree.name} with a profile exited {res.returncode}:\n{res.stderr}"
            )
            return b
    b.second_run_diff += [f"with a profile, {d}" for d in _diff(profiled, profiled_again)]
    return b


def synthetic_profile(report: dict) -> dict:
    """A profile (schema locktune-profile/1) with figures for every site of a rewrite's
    report, recommending rcl, mcs and posix in turn."""
    locks = []
    for k, site in enumerate(report["sites"]):
        locks.append(
            {
                "site": {"file": site["file"], "line": site["line"]},
                "kind": "mutex",
                "instances": 1 + k % 3,
                "acquisitions": 1000 * (k + 1),
                "contended": 37 * (k + 1),
                "cs_percent": 30.0 - k,
                "misses_per_cs": None,
                "locality_estimate": {"extra_ns_per_cs": 120.0 + k},
                "recommendation": {
                    "algorithm": ("rcl", "mcs", "posix")[k % 3],
                    "reason": "synthetic profile of the corpus test",
                },
            }
        )
    return {"schema": "locktune-profile/1", "meta": {}, "totals": {}, "locks": locks}


def _diff(a: Path, b: Path) -> list[str]:
    out = []
    cmp = filecmp.dircmp(a, b)

    def walk(c: filecmp.dircmp, prefix: str) -> None:
        out.extend(f"only in first run: {prefix}{n}" for n in c.left_only)
        out.extend(f"only in second run: {prefix}{n}" for n in c.right_only)
        for n in c.common_files:
            if (Path(c.left) / n).read_bytes() != (Path(c.right) / n).read_bytes():
                out.append(f"changed by the second run: {prefix}{n}")
        for n, sub in c.subdirs.items():
            walk(sub, f"{prefix}{n}/")

    walk(cmp, "")
    return out


def run_program(
    exe: Path, env: dict[str, str], timeout: float = RUN_TIMEOUT_S
) -> subprocess.CompletedProcess:
    return subprocess.run([str(exe)], capture_output=True, text=True, timeout=timeout, env=env)


PROBE = r"""
#include <errno.h>
#include <stdio.h>
#include "locktune.h"
static lt_mutex_t m = LT_MUTEX_INITIALIZER(LT_SITE_UNKNOWN);
int main(int argc, char **argv)
{
    if (argc > 1) { /* capability probes */
        pthread_mutexattr_t a;
        lt_mutex_t r;
        pthread_mutexattr_init(&a);
        pthread_mutexattr_settype(&a, argv[1][0] == 'r' ? PTHREAD_MUTEX_RECURSIVE
                                                        : PTHREAD_MUTEX_ERRORCHECK);
        if (lt_mutex_init(&r, &a, LT_SITE_UNKNOWN) != 0)
            return 1;
        if (argv[1][0] == 'r') /* a recursive lock is taken again by its owner */
            return lt_mutex_lock(&r) == 0 && lt_mutex_trylock(&r) == 0 ? 0 : 1;
        /* an error-checking lock refuses an unlock by a thread that does not hold it */
        return lt_mutex_unlock(&r) == EPERM ? 0 : 1;
    }
    puts(lt_mutex_algorithm(&m));
    return 0;
}
"""


def probe(work: Path, flags: list[str]) -> Path:
    src = work / "probe.c"
    src.write_text(PROBE)
    exe = work / "probe"
    res = _run(["cc", "-O1", "-Wall", str(src), *flags, "-o", str(exe)])
    if res.returncode != 0:
        raise RuntimeError(f"the runtime probe does not compile:\n{res.stderr}")
    return exe


def registered(probe_exe: Path, algorithms: list[str], env_fn) -> dict[str, str | None]:
    """algorithm -> None when the runtime runs it, else why not.

    An algorithm is there when LOCKTUNE_ALGO=default=NAME binds a lock to NAME (a runtime
    that ignored the variable, or fell back to another algorithm, would print that one)."""
    out = {}
    for algo in algorithms:
        res = subprocess.run(
            [str(probe_exe)],
            capture_output=True,
            text=True,
            timeout=30,
            env=env_fn(LOCKTUNE_ALGO=f"default={algo}"),
        )
        if res.returncode == 0 and res.stdout.strip() == algo:
            out[algo] = None
        else:
            said = (res.stderr or res.stdout).strip().splitlines()
            out[algo] = f"runtime does not register {algo!r} ({said[0] if said else 'no output'})"
    return out
