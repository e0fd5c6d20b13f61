"""`locktune rewrite`, the passes in order (docs/rewrite.md):

    1. select    the C files and headers named, the source root, where the output goes
    2. wrappers  lock wrapper macros recognised, functions named, their lock accessors
    3. extract   locktune-extract (Clang): critical sections -> functions run by lt_execute
    4. cocci     the semantic patches: sites, then calls, condition variables and types
    5. residue   what Coccinelle could not parse, finished by token and reported;
                 init wrappers: each caller its own site (initwrappers.py)
    6. include   #include "locktune.h" (and locktune_config.h) after the feature-test macros
    7. header    locktune_config.h: one entry per site, with the profile's figures
    8. write     every file at once, at the end: a failure never leaves a half-rewritten tree

Every pass works on a staging copy of the selected files.  A file that does not parse is
reported with its file:line and left exactly as it was; the others are still rewritten.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from locktune import algorithms
from locktune.errors import LocktuneError, UsageProblem
from locktune.profiler import document
from locktune.rewrite import (
    accessors,
    bytoken,
    clex,
    config_header,
    extract,
    includes,
    initwrappers,
    residue,
    sites,
    wrappers,
)
from locktune.rewrite import cocci as cocci_mod
from locktune.rewrite import report as report_mod
from locktune.rewrite.linemap import LineMap

SOURCE_SUFFIXES = (".c", ".h")
VCS_DIRS = {".git", ".hg", ".svn"}


@dataclass
class Options:
    paths: list[Path]
    out: Path | None = None
    in_place: bool = False
    allow_dirty: bool = False
    profile: Path | None = None
    compile_commands: Path | None = None
    source_root: Path | None = None
    cflags: str = ""
    lock_wrappers: dict[str, str] = field(default_factory=dict)  # name -> role[:EXPR]
    jobs: int = 0
    keep_going: bool = False  # write the output even when some files could not be analysed
    retarget_by: str = "auto"  # auto | coccinelle | token (docs/rewrite.md)


@dataclass
class FileState:
    rel: str
    original: str
    text: str
    linemap: LineMap = field(default_factory=LineMap)
    sites: list[dict] = field(default_factory=list)
    fallbacks: list[dict] = field(default_factory=list)
    error: str | None = None  # could not be analysed; one line: "file:line: message"
    extract_error: str | None = None  # analysed, but its sections could not be extracted
    by_token: bool = False  # failed, retargeted by token (--keep-going): sections kept
    extracted: bool = False
    retargeted_by: str | None = None  # "coccinelle" or "token" (bytoken.py)
    notes: list[dict] = field(default_factory=list)  # {file, line, message}: done otherwise

    @property
    def usable(self) -> bool:
        """Its text goes into the output: rewritten normally, or retargeted by token."""
        return self.error is None or self.by_token


@dataclass
class Result:
    report: dict
    errors: list[str]
    dest: Path


Progress = Callable[[str], None]


def _quiet(_msg: str) -> None:
    pass


# --- 1. select ---------------------------------------------------------------------------


def _walk(d: Path, skip: set[Path]) -> list[Path]:
    out = []
    for dirpath, dirnames, filenames in os.walk(d):
        here = Path(dirpath)
        dirnames[:] = sorted(  # hidden directories: VCS, quilt's .pc backups, caches
            n for n in dirnames if not n.startswith(".") and (here / n).resolve() not in skip
        )
        for n in sorted(filenames):
            if n.endswith(SOURCE_SUFFIXES) and n != config_header.NAME:
                out.append(here / n)
    return out


def select(opts: Options) -> tuple[Path, Path, list[str]]:
    """(source root, destination, selected files relative to the root)."""
    paths = [p.resolve() for p in opts.paths]
    for p in paths:
        if p.is_file() and not p.name.endswith(SOURCE_SUFFIXES):
            raise UsageProblem(f"{p}: not a C source or header (.c, .h)")
    if opts.source_root is not None:
        root = opts.source_root.resolve()
    elif len(paths) == 1 and paths[0].is_dir():
        root = paths[0]
    else:
        root = Path(os.path.commonpath([p if p.is_dir() else p.parent for p in paths]))
    if not root.is_dir():
        raise UsageProblem(f"{root}: the source root is not a directory")
    if opts.in_place:
        dest = root
    else:
        dest = (opts.out or root.parent / f"{root.name}-locktune").resolve()
        if dest == root:
            raise UsageProblem(f"--out {dest} is the source tree itself; use --in-place")
        if dest.is_relative_to(root) or root.is_relative_to(dest):
            raise UsageProblem(
                f"--out {dest} and the source root {root} must not contain each other"
            )
    files: list[Path] = []
    for p in paths:
        if not p.is_relative_to(root):
            raise UsageProblem(f"{p}: outside the source root {root}")
        files += _walk(p, {dest}) if p.is_dir() else [p]
    rels = sorted({str(f.relative_to(root)) for f in files})
    if not rels:
        raise UsageProblem(f"no C sources or headers under {', '.join(map(str, opts.paths))}")
    return root, dest, rels


def check_clean(root: Path, rels: list[str]) -> None:
    """--in-place needs a version-controlled tree without uncommitted changes to these files."""
    try:
        res = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--", *rels],
            capture_output=True,
            text=True,
            timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired):
        res = None
    if res is None or res.returncode != 0:
        raise UsageProblem(
            f"refusing to rewrite {root} in place: it is not under git version control "
            "(pass --allow-dirty to rewrite it anyway)"
        )
    dirty = [ln[3:] for ln in res.stdout.splitlines() if ln.strip()]
    if dirty:
        raise UsageProblem(
            f"refusing to rewrite {root} in place: {len(dirty)} file(s) have uncommitted "
            f"changes ({dirty[0]}{', ...' if len(dirty) > 1 else ''}); commit them or pass "
            "--allow-dirty"
        )


def prepare_dest(root: Path, dest: Path) -> None:
    """A copy of the whole tree (the build needs it), replacing a previous output only."""
    if dest.exists():
        if any(dest.iterdir()) and not config_header.is_generated(dest / config_header.NAME):
            raise UsageProblem(
                f"--out {dest} exists and is not the output of a previous locktune rewrite; "
                "choose another directory or remove it"
            )
        shutil.rmtree(dest)
    shutil.copytree(root, dest, symlinks=True, ignore=shutil.ignore_patterns(*VCS_DIRS))


# --- 3/4. cocci and residue, per file ----------------------------------------------------


def _site_fn(state: FileState) -> residue.SiteFn:
    def site(line: int, kind: str, name: str) -> str:
        orig = state.linemap(line)
        state.sites.append(
            {"file": state.rel, "line": orig, "kind": kind, "name": name, "function": None}
        )
        return sites.ident(state.rel, orig)

    return site


def retarget(
    state: FileState, passes: cocci_mod.CocciPasses, stage: Path, by: str = "auto"
) -> None:
    """Retarget one file's locks: by the semantic patches, or by token (bytoken.py) when
    `by` says so (cocci.choose), or when spatch fails on the file or runs too long: then
    what the patches did is undone, the whole file is done by token, and a note says where
    spatch failed."""
    if by == "token" or (by == "auto" and state.text.count("\n") > cocci_mod.MAX_LINES):
        _by_token(state, stage)
    else:
        text, linemap, n_sites = state.text, state.linemap, len(state.sites)
        try:
            _by_coccinelle(
                state, passes, stage, None if by == "coccinelle" else cocci_mod.AUTO_TIMEOUT_S
            )
        except cocci_mod.SpatchFailure as e:
            line, where = 1, ""
            if e.why is not None:
                line = cocci_mod.locate_failure(passes, e.pass_name, text, state.rel)
                where = " on the declaration or function that starts here" if line > 1 else ""
            state.text, state.linemap = text, linemap
            del state.sites[n_sites:]
            what = str(e).split(": ", 1)[-1]  # spatch (PASS) failed: WHY
            state.notes.append(
                {
                    "file": state.rel,
                    "line": linemap(line),
                    "message": f"{what.replace(' failed:', f' failed{where}:', 1)}; the file "
                    "was retargeted by token instead",
                }
            )
            _by_token(state, stage)
    text, done = residue.finish(state.text, _site_fn(state))
    if done:
        state.fallbacks = [
            {"file": state.rel, "line": state.linemap(f.line), "name": f.name, "to": f.replacement}
            for f in done
        ]
        state.text = text
        (stage / state.rel).write_text(text)


def _by_coccinelle(
    state: FileState, passes: cocci_mod.CocciPasses, stage: Path, timeout: float | None
) -> None:
    for name, _parts, trigger in cocci_mod.PASSES:
        if not trigger.search(state.text):
            continue
        before = state.text
        entry = {"rel": state.rel, "lines": state.linemap.as_json()}
        result = passes.run_pass(name, stage, state.rel, entry, timeout)
        state.sites += result.sites
        state.linemap = state.linemap.then(before, result.text)
        state.text = result.text
    state.retargeted_by = "coccinelle"


def _by_token(state: FileState, stage: Path) -> None:
    """bytoken.py: every line stays where it was, so the line map does not change."""
    result = bytoken.retarget(state.text, state.rel, state.linemap)
    state.sites += result.sites
    if result.text != state.text:
        state.text = result.text
        (stage / state.rel).write_text(result.text)
    state.retargeted_by = "token"


# --- 5. includes -------------------------------------------------------------------------


def _uses_locktune(text: str) -> tuple[bool, bool]:
    """(uses the lt_ API, names a site)"""
    api = site = False
    for t in clex.tokens(text):
        if t.kind == "ident" and (t.text.startswith("lt_") or t.text.startswith("LT_")):
            api = True
            if t.text.startswith("LT_SITE_"):
                site = True
                break
    return api, site


def place_includes(state: FileState, dest: Path) -> None:
    if state.text == state.original:
        return
    api, names_site = _uses_locktune(state.text)
    if not api:
        return
    wanted = ['#include "locktune.h"']
    if state.rel.endswith(".c") or names_site:
        cfg = os.path.relpath(dest / config_header.NAME, (dest / state.rel).parent)
        wanted.append(f'#include "{cfg}"')
    state.text = includes.add_includes(state.text, wanted)


# --- the whole run -----------------------------------------------------------------------


def run(opts: Options, progress: Progress = _quiet) -> Result:
    t0 = time.monotonic()
    root, dest, rels = select(opts)
    if opts.in_place and not opts.allow_dirty:
        check_clean(root, rels)
    previous, previous_profile = config_header.read_previous(root)
    profile = {}
    if opts.profile:
        profile = document.by_site(document.read(opts.profile), opts.profile, root)

    with tempfile.TemporaryDirectory(prefix="locktune-rewrite-") as tmp:
        stage = Path(tmp) / "stage"
        states: dict[str, FileState] = {}
        for rel in rels:
            try:
                text = (root / rel).read_text()
            except UnicodeDecodeError:
                text = (root / rel).read_text(encoding="latin-1")
            (stage / rel).parent.mkdir(parents=True, exist_ok=True)
            (stage / rel).write_text(text)
            states[rel] = FileState(rel, text, text)

        passes = cocci_mod.CocciPasses(workdir=Path(tmp))
        try:
            # 2. wrappers: macros found, functions found (the whole-program listing, Clang)
            # or named, accessors for the functions with external linkage
            flags = _flags(opts, root, Path(tmp))
            to_extract = [r for r in rels if r.endswith(".c") and _in_db(flags, root / r)]
            t = time.monotonic()
            listing = extract.list_functions(to_extract, root, flags)
            listing_s = time.monotonic() - t
            user_roles = {n: spec.split(":", 1)[0] for n, spec in opts.lock_wrappers.items()}
            auto = wrappers.find({r: s.text for r, s in states.items()}, user_roles)
            fns, fns_rejected = wrappers.functions(listing, auto, opts.lock_wrappers)
            named = {**wrappers.function_specs(fns), **opts.lock_wrappers}
            listed = {(f, n): lock for n, w in fns.items() for f, _line, lock in w["definitions"]}
            accs, no_accessor = _accessors(states, named, auto, passes, stage, listed)
            wrapper_roles = {**{n: w["role"] for n, w in auto.items()}, **named}
            for acc in accs:
                wrapper_roles.update({w: acc.spec(w) for w in acc.wrappers})
            # The token scan of the files Clang does not analyse knows the static wrapper
            # functions too (the extraction sees their bodies; a token scan does not): their
            # bodies are the wrappers' own calls, not sections.
            token_roles = {**{n: w["role"] for n, w in fns.items()}, **wrapper_roles}

            # 3. extract
            progress(f"extracting critical sections from {len(to_extract)} files (Clang)")
            phases = {"select": time.monotonic() - t0 - listing_s, "list_functions": listing_s}
            t = time.monotonic()
            ext = extract.run(to_extract, root, stage, flags, wrapper_roles, listing=listing)
            phases["extract"] = time.monotonic() - t
            t = time.monotonic()
            _analysis_errors(states, ext, to_extract)
            _fail_includers(states)
            for rel, st in states.items():
                if st.error:
                    continue
                now = accessors.insert((stage / rel).read_text(), rel, accs)
                if now != st.text:
                    st.linemap = st.linemap.then(st.text, now)
                    st.text = now
                    st.extracted = True
                    (stage / rel).write_text(now)

            # 4, 5. semantic patches, then the residue
            todo = [s for s in states.values() if s.error is None]
            done = 0

            by = cocci_mod.choose({st.rel: st.text for st in todo}, opts.retarget_by)

            def one(st: FileState) -> None:
                try:
                    retarget(st, passes, stage, by[st.rel])
                except LocktuneError as e:
                    st.error = str(e)

            jobs = opts.jobs or min(8, os.cpu_count() or 1)
            progress(f"retargeting locks in {len(todo)} files")
            with ThreadPoolExecutor(max_workers=jobs) as pool:
                for st in pool.map(lambda st: (one(st), st)[1], todo):
                    done += 1
                    how = "by token" if st.retargeted_by == "token" else "Coccinelle"
                    progress(f"retargeting locks {done}/{len(todo)} ({st.rel}: {how})")
        finally:
            passes.close()
        phases["cocci"] = time.monotonic() - t
        t = time.monotonic()

        # init wrappers: each caller its own site (the wrapper's call is retargeted by now)
        chosen, kept = initwrappers.plan(listing, states)
        for note in kept + initwrappers.apply(states, chosen):
            if note["file"] in states:  # else a wrapper outside the files rewritten
                states[note["file"]].notes.append(note)

        # The files that could not be analysed: with --keep-going, their locks are retargeted
        # by token (exact renames, sites for their inits and initialisers) so that a lock is
        # lt_ in every file that touches it, and their sections are kept; otherwise nothing
        # is written.
        failed = [st for st in states.values() if st.error is not None]
        for st in failed:
            ext.sections += token_sections(st.rel, st.original, token_roles, NOT_PARSED, st.error)
            if opts.keep_going:  # bytoken.py: the patches' renames and sites, by token
                st.by_token = True
                st.text, st.linemap = st.original, LineMap()
                _by_token(st, stage)
        # .c files the build does not compile, and headers (the extractor rewrites the files
        # it is given, not the headers they share): retargeted, their sections kept.
        # A header that no compiled file includes is no more part of the program than such
        # a .c file (libuv's src/win/*-inl.h on Linux).
        # Clang's listing names the files each translation unit read; without it, and for
        # the files that did not parse (Clang stopped reading them), the #include lines say
        # (a conditional include counts).
        includes = _Includes(states)
        read = listing.get("included") if listing else None
        if read is None:
            built = set(includes.closure(to_extract))
        else:
            built = set(read) | set(includes.closure([r for r in to_extract if states[r].error]))
        built |= set(to_extract)
        for rel in rels:
            if rel not in to_extract and states[rel].error is None:
                if rel not in built:  # not part of the program as built: not counted
                    why = NOT_INCLUDED if rel.endswith(".h") else NOT_BUILT
                    ext.sections += token_sections(
                        rel, states[rel].original, token_roles, why, kind="not-built"
                    )
                else:
                    ext.sections += token_sections(
                        rel, states[rel].original, token_roles, IN_HEADER
                    )

        # 6. includes
        for st in states.values():
            if st.usable:
                place_includes(st, dest)

        # 7. sites and header
        table = _sites(states, ext, previous, profile, rels)
        for e in table.check_unique_idents():
            rel = e.split(":", 1)[0]
            if rel in states:
                states[rel].error = e
        header = config_header.render(
            table.ordered(),
            opts.profile.name if opts.profile else previous_profile,
            accessors.prototypes({r: st.text for r, st in states.items() if st.usable}),
        )

        # 8. write (nothing when a file could not be analysed, unless --keep-going)
        written = []
        writing = opts.keep_going or not any(st.error for st in states.values())
        if writing and not opts.in_place:
            prepare_dest(root, dest)
        for rel, st in states.items():
            if writing and st.usable and st.text != st.original:
                _write(dest / rel, st.text, root / rel)
                written.append(rel)
        header_path = dest / config_header.NAME
        if (
            writing
            and header_path.exists()
            and not config_header.is_generated(header_path)
            and header_path.read_text() != header
        ):
            raise LocktuneError(f"{header_path}: exists and was not generated by locktune rewrite")
        if writing and (not header_path.exists() or header_path.read_text() != header):
            header_path.write_text(header)
        phases["header_and_write"] = time.monotonic() - t

    # the files that do not parse first, then those that include them
    errors = sorted(
        (st.error for st in states.values() if st.error), key=lambda e: " includes " in e
    )
    rep = report_mod.build(
        root=root,
        dest=dest,
        opts=opts,
        states=states,
        ext=ext,
        table=table,
        wrappers_found=auto,
        wrapper_functions=fns,
        wrappers_rejected=fns_rejected,
        accessors=accs,
        no_accessor=no_accessor,
        written=written,
        written_any=writing,
        profile=profile,
        elapsed=time.monotonic() - t0,
        phases=phases,
    )
    return Result(rep, errors, dest)


def _analysis_errors(
    states: dict[str, FileState], ext: extract.ExtractResult, analysed: list[str]
) -> None:
    """Which files could not be analysed, and why: one line each, file:line: message.

    A diagnostic names the file it is in (a header's error fails that header); every file
    given to the extractor that it did not report as parsed failed too, with the first
    error of its translation unit.  An internal error of the extractor (its rewrite did
    not compile, edits overlapped) only costs that file its extraction: its sections are
    kept and it is retargeted like any other file."""
    for d in ext.diagnostics:
        st = states.get(d.get("file"))
        if st is None:
            continue
        msg = d.get("message") or "does not parse"
        where = f"{d['file']}:{d.get('line', 0)}: {msg}"
        if msg.startswith(("internal error", "not extracted")):
            st.extract_error = st.extract_error or where
        elif st.error is None:
            st.error = where
    failed = {f["file"]: f for f in ext.files_failed}
    for rel in analysed:
        st = states[rel]
        if st.error is not None:
            continue
        f = failed.get(rel)
        if f is not None:
            efile = f.get("error_file") or rel
            where = f"{efile}:{f.get('error_line', 0)}: {f.get('message') or 'does not parse'}"
            other = states.get(efile)
            if efile == rel:
                st.error = where
            elif other is not None and other.error is not None:
                st.error = f"{rel}: includes {efile}, which does not parse ({other.error})"
            else:
                st.error = f"{rel}: {where}"
        elif ext.mode == "extract" and ext.files_analysed is not None:
            if rel not in ext.files_analysed:
                st.error = (
                    f"{rel}:0: locktune-extract did not analyse it (no usable compile command)"
                )
    for sec in ext.sections:
        st = states.get(sec.get("file"))
        if st is not None and st.extract_error and sec.get("status") == "extracted":
            sec["status"] = "kept"
            sec["reason"] = (
                NOT_EVERY_COMMAND
                if "not extracted" in st.extract_error
                else "not extracted: an internal error of the extractor in this file"
            )
            sec["detail"] = st.extract_error


_LOCKING = {"pthread_mutex_lock", "pthread_mutex_trylock", "pthread_mutex_timedlock"}


NOT_EVERY_COMMAND = (
    "not extracted: the rewritten file does not compile with every command the build "
    "compiles it with (a section depends on the configuration)"
)
IN_HEADER = (
    "not analysed: in a header (sections are extracted from the files the build compiles, "
    "not from the headers they share)"
)
NOT_PARSED = "not analysed: the file could not be analysed with its compile command"
NOT_BUILT = (
    "not analysed: the file is not in the compilation database (the build does not compile it)"
)
NOT_INCLUDED = "not analysed: no file the build compiles includes this header (as configured)"


def token_sections(
    rel: str,
    text: str,
    roles: dict[str, str],
    reason: str,
    detail: str | None = None,
    kind: str = "section",
) -> list[dict]:
    """The lock calls of a file Clang did not analyse, found by token (outside directives,
    comments and strings), each listed as a kept section: the report lists every section
    of every file, and the share extracted counts them."""
    lockers = _LOCKING | {n for n, spec in roles.items() if spec.split(":", 1)[0] != "unlock"}
    toks = clex.tokens(text)
    out, directive = [], False
    depth, candidate, function = 0, None, None
    braces: list[bool] = []  # per open '{': True for a linkage block (`extern "C" {`)
    for i, t in enumerate(toks):
        if t.bol:
            directive = t.text == "#"
        if directive:
            continue
        # The enclosing function: at file scope, the name before the last '(' that a '{'
        # follows (after its parameter list, and attributes if any).  A header's
        # `extern "C" {` (under `#ifdef __cplusplus`, which a token scan cannot evaluate)
        # opens no scope.
        if t.text == "{":
            linkage = depth == 0 and i >= 2 and toks[i - 2].text == "extern"
            linkage = linkage and toks[i - 1].text.startswith('"')
            braces.append(linkage)
            if linkage:
                continue
            if depth == 0:
                function = candidate
            depth += 1
        elif t.text == "}":
            if braces and braces.pop():
                continue
            depth = max(0, depth - 1)
            if depth == 0:
                function = candidate = None
        elif depth == 0 and t.kind == "ident" and i + 1 < len(toks) and toks[i + 1].text == "(":
            candidate = candidate if t.text.startswith("__attribute") else t.text
        elif depth == 0 and t.text == ";":
            candidate = None
        # A call is in a function's body: at file scope the name is declared
        # (`void STATS_LOCK(void);`), not called.
        if t.kind != "ident" or t.text not in lockers or function in roles or depth == 0:
            continue
        if i + 1 >= len(toks) or toks[i + 1].text != "(":
            continue
        close = clex.matching_paren(toks, i + 1)
        arg = text[toks[i + 1].start + 1 : toks[close].start].strip() if close else ""
        out.append(
            {
                "file": rel,
                "line": t.line,
                "end_lines": [],
                "function": function,
                "lock": arg,
                "status": "kept",
                "reason": reason,
                "inputs": [],
                "outputs": [],
                "kind": kind,
                **({"detail": detail} if detail else {}),
            }
        )
    return out


_INCLUDE = re.compile(r'^\s*#\s*include\s*["<]([^">]+)[">]', re.MULTILINE)


class _Includes:
    """Which files of the tree a file includes, by its `#include` lines: a name is looked up
    next to the including file, then by file name anywhere in the tree (an -I folder).  The
    lookup by name may find a header the compiler would not (two headers of one name): it
    errs towards "included", the side on which nothing is left out."""

    def __init__(self, states: dict[str, FileState]) -> None:
        self.states = states
        self.by_name: dict[str, list[str]] = {}
        for rel in states:
            self.by_name.setdefault(Path(rel).name, []).append(rel)

    def of(self, rel: str) -> list[str]:
        out = []
        for inc in _INCLUDE.findall(self.states[rel].original):
            here = os.path.normpath(str(Path(rel).parent / inc))
            out += [here] if here in self.states else self.by_name.get(Path(inc).name, [])
        return out

    def closure(self, roots: list[str]):
        """The files `roots` include, directly or not, each once (roots excluded unless
        included), in the order they are reached."""
        seen, todo = set(), [h for r in roots for h in self.of(r)]
        while todo:
            h = todo.pop()
            if h in seen:
                continue
            seen.add(h)
            yield h
            todo += self.of(h)


def _fail_includers(states: dict[str, FileState]) -> None:
    """A source file that includes a header that does not parse did not parse either: leave
    it as it is too (its extraction did not happen; retargeting only its calls would leave
    it half rewritten)."""
    failed = {rel: st.error for rel, st in states.items() if st.error and rel.endswith(".h")}
    if not failed:
        return
    includes = _Includes(states)
    for rel, st in states.items():
        if st.error or not rel.endswith(".c"):
            continue
        for h in includes.closure([rel]):
            if h in failed:
                st.error = f"{rel}: includes {h}, which does not parse ({failed[h]})"
                break


def _accessors(
    states: dict[str, FileState],
    named: dict[str, str],
    auto: dict[str, dict],
    passes: cocci_mod.CocciPasses,
    stage: Path,
    listed: dict[tuple[str, str], str] | None = None,
) -> tuple[list[accessors.Accessor], dict[str, str]]:
    """Accessors for the wrapper functions named without :EXPR (accessors.py)."""
    plain = [n for n, spec in named.items() if ":" not in spec and n not in auto]
    if not plain:
        return [], {}
    defined = re.compile(r"\b(?:" + "|".join(map(re.escape, plain)) + r")\s*\([^;{}]*\)\s*\{")
    texts = {r: s.text for r, s in states.items() if s.error is None}
    candidates = []
    for rel, text in sorted(texts.items()):
        if rel.endswith(".c") and defined.search(text):
            candidates += passes.report("lock_wrappers", stage, rel)
    return accessors.plan(candidates, texts, named, auto, listed)


def _flags(opts: Options, root: Path, tmp: Path) -> extract.Flags:
    if opts.compile_commands:
        return extract.load_compile_commands(opts.compile_commands.resolve(), tmp)
    import shlex

    cflags = shlex.split(opts.cflags) if opts.cflags else []
    return extract.Flags(cflags=cflags + [f"-I{root}"])


def _in_db(flags: extract.Flags, path: Path) -> bool:
    return flags.db_files is None or path.resolve() in flags.db_files


def _write(path: Path, text: str, like: Path) -> None:
    """Replace path's content atomically, keeping the mode of the original file."""
    tmp = path.with_name(path.name + ".locktune-tmp")
    tmp.write_text(text)
    try:
        shutil.copymode(like, tmp)
    except OSError:
        pass
    os.replace(tmp, path)


def _sites(
    states: dict[str, FileState],
    ext: extract.ExtractResult,
    previous: dict[str, dict],
    profile: dict,
    rels: list[str],
) -> sites.SiteTable:
    table = sites.SiteTable()
    for st in states.values():
        if st.usable:
            for rec in st.sites:
                table.add(rec)
    # Sites named by identifiers already in the code (a rerun on rewritten code).
    rerun: set[str] = set()
    for st in states.values():
        if not st.usable:
            continue
        for ident in sorted(sites.idents_in(st.text)):
            if ident in table.by_ident():
                continue
            p = previous.get(ident)
            loc = (p["file"], p["line"]) if p else sites.decode(ident, rels)
            if loc is None:
                continue
            table.add({"file": loc[0], "line": loc[1], "kind": "init", "name": None})
            rerun.add(ident)
    # lock_keys from extraction join sections to sites.
    for ls in ext.lock_sites:
        s = table.sites.get((ls.get("file"), int(ls.get("line", 0))))
        if s is not None and ls.get("lock_key") and ls["lock_key"] not in s.lock_keys:
            s.lock_keys.append(ls["lock_key"])
    key_index: dict[str, list[sites.Site]] = {}
    for s in table.sites.values():
        for k in s.lock_keys:
            key_index.setdefault(k, []).append(s)
    for sec in ext.sections:
        matched = sites.match_section(sec, table, key_index)
        sec["site"] = f"{matched[0].file}:{matched[0].line}" if len(matched) == 1 else None
        if len(matched) > 1:
            sec["candidate_sites"] = [f"{m.file}:{m.line}" for m in matched]
        for m in matched:
            m.sections.append(sec)
    table.number(previous)
    for s in table.sites.values():
        p = previous.get(s.ident)
        lock = profile.get(s.key)
        if lock is None and s.via is not None:  # a profile naming the init wrapper's line
            lock = profile.get(s.via)
        s.profile = lock
        if p is not None:
            # kind, names, section counts and comment of the previous header; its
            # algorithm and server, the user's edits included
            config_header.carry_over(s, p, rerun=s.ident in rerun)
            s.algorithm, s.server = p["algorithm"], p["server"]
        if lock is not None and (p is None or not config_header.user_chose(p)):
            rec = lock.get("recommendation") or {}
            algo = rec.get("algorithm") or "posix"
            if p is None or algo != p["algorithm"]:  # same algorithm: keep the server
                s.algorithm = algo
                s.server = int(rec.get("server", 0)) if algo in algorithms.server_based() else -1
    return table
