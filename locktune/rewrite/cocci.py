"""Running the semantic patches of cocci/ through spatch.

The patches run in passes, each one a spatch run over one file:

    mutex_init         pthread_mutex_init(m, a)           -> lt_mutex_init(m, a, SITE)
    mutex_initializer  PTHREAD_*MUTEX_INITIALIZER*        -> LT_*_INITIALIZER*(SITE)
    mutex_zeroed       static pthread_mutex_t z;          -> ... = LT_MUTEX_INITIALIZER(SITE)
    retarget           mutex_calls + cond + types, the renames that need no site

The three site passes are separate runs because Coccinelle positions are only trustworthy
until a rule of the same run modifies the code around them; the renames need no position
and run together.  Each site pass keeps every line where it was, and the LineMap follows
them anyway (locktune_sites.py reads it from LOCKTUNE_SITE_MAP).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from locktune import native
from locktune.errors import LocktuneError

# (pass name, patches, a regex the file must match for the pass to have anything to do)
PASSES: list[tuple[str, tuple[str, ...], re.Pattern]] = [
    ("mutex_init", ("mutex_init",), re.compile(r"\bpthread_mutex_init\b")),
    (
        "mutex_initializer",
        ("mutex_initializer",),
        re.compile(r"\bPTHREAD_\w*MUTEX_INITIALIZER"),
    ),
    ("mutex_zeroed", ("mutex_zeroed",), re.compile(r"\bpthread_mutex_t\b")),
    (
        "retarget",
        ("mutex_calls", "cond", "types"),
        re.compile(r"\bpthread_(mutex|cond)_\w+|\bPTHREAD_COND_INITIALIZER\b"),
    ),
]

SPATCH_TIMEOUT_S = 300

# Files longer than this are retargeted by token (bytoken.py) when the rewriter chooses:
# spatch's time per pass grows faster than the file (about 0.2 s at 500 lines, 0.5 s at
# 5,000, 3 s at 20,000, minutes at 250,000 on two CPUs), and four passes run per file.
MAX_LINES = 5000
# Coccinelle's share of a rewrite, in estimated spatch seconds (ESTIMATE_S per pass plus
# ESTIMATE_S_PER_LINE per line): the smallest files take it, the others go by token (a tree
# of 500 files would otherwise spend minutes starting spatch 2000 times).
BUDGET_S = 60.0
ESTIMATE_S = 0.15
ESTIMATE_S_PER_LINE = 0.00005


def choose(texts: dict[str, str], by: str = "auto") -> dict[str, str]:
    """rel -> how to retarget each file (docs/rewrite.md, "Coccinelle or tokens"): `by`
    itself unless auto; auto gives Coccinelle ("auto": with AUTO_TIMEOUT_S) the files up to
    MAX_LINES, smallest first, while their estimated spatch time stays within BUDGET_S, and
    "token" to the others."""
    if by != "auto":
        return {rel: by for rel in texts}
    out, spent = {}, 0.0
    for rel, text in sorted(texts.items(), key=lambda kv: (len(kv[1]), kv[0])):
        lines = text.count("\n")
        passes = sum(1 for _n, _p, trigger in PASSES if trigger.search(text))
        cost = passes * (ESTIMATE_S + ESTIMATE_S_PER_LINE * lines)
        if lines <= MAX_LINES and spent + cost <= BUDGET_S:
            out[rel], spent = "auto", spent + cost
        else:
            out[rel] = "token"
    return out


# A pass that runs longer than this on a file the rewriter chose Coccinelle for is given
# up; the file is retargeted by token instead (and the report says so).
AUTO_TIMEOUT_S = 120


def spatch_path() -> str:
    path = shutil.which("spatch")
    if path is None:
        raise LocktuneError("spatch (Coccinelle) is not installed; run scripts/bootstrap")
    return path


def patch_options(patch: Path) -> list[str]:
    """Options a patch asks for in a `// spatch-options: ...` comment."""
    m = re.search(r"^// spatch-options:(.*)$", patch.read_text(), re.MULTILINE)
    return m.group(1).split() if m else []


def spatch_command(patch: Path, file: str, out: str) -> list[str]:
    return [
        spatch_path(),
        "--very-quiet",
        "--no-includes",
        "--no-show-diff",
        *patch_options(patch),
        "--sp-file",
        str(patch),
        file,
        "-o",
        out,
    ]


def spatch_env(cocci_dir: Path, **extra: str) -> dict[str, str]:
    """spatch embeds the system Python: it finds locktune_sites.py through PYTHONPATH."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("LOCKTUNE_SITE_", "LOCKTUNE_WRAPPER_"))
    }
    env["PYTHONPATH"] = str(cocci_dir)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.update(extra)
    return env


class SpatchFailure(LocktuneError):
    """spatch failed on a file (`why`: what it said) or ran too long (`why` None)."""

    def __init__(self, message: str, pass_name: str, why: str | None):
        super().__init__(message)
        self.pass_name = pass_name
        self.why = why


@dataclass
class PassResult:
    text: str
    sites: list[dict]


class CocciPasses:
    """The semantic patches of one installation, combined into the passes above."""

    def __init__(self, cocci_dir: Path | None = None, workdir: Path | None = None):
        self.cocci_dir = cocci_dir or native.cocci_dir()
        missing = [
            p for _n, ps, _r in PASSES for p in ps if not (self.cocci_dir / f"{p}.cocci").exists()
        ]
        if missing:
            raise LocktuneError(
                f"{self.cocci_dir}: semantic patches missing ({', '.join(missing)}); "
                "rebuild with `pip install .`"
            )
        self._tmp = tempfile.TemporaryDirectory(prefix="locktune-cocci-", dir=workdir)
        self.tmp = Path(self._tmp.name)
        self.patches: dict[str, Path] = {}
        for name, parts, _r in PASSES:
            if len(parts) == 1:
                self.patches[name] = self.cocci_dir / f"{parts[0]}.cocci"
            else:  # position-free patches: one run; each starts with its own rules
                combined = self.tmp / f"{name}.cocci"
                combined.write_text(
                    "\n".join((self.cocci_dir / f"{p}.cocci").read_text() for p in parts)
                )
                self.patches[name] = combined

    def report(self, patch: str, workdir: Path, rel: str) -> list[dict]:
        """Run a patch that only reports (lock_wrappers.cocci) on workdir/rel: its records."""
        tag = re.sub(r"[^\w]", "_", rel) + "." + patch
        log_file = self.tmp / f"{tag}.jsonl"
        log_file.write_text("")
        cmd = [
            spatch_path(), "--very-quiet", "--no-includes", "--no-show-diff",
            "--sp-file", str(self.cocci_dir / f"{patch}.cocci"), rel,
        ]  # fmt: skip
        env = spatch_env(self.cocci_dir, LOCKTUNE_WRAPPER_LOG=str(log_file))
        try:
            res = subprocess.run(
                cmd, cwd=workdir, env=env, capture_output=True, text=True, timeout=SPATCH_TIMEOUT_S
            )
        except subprocess.TimeoutExpired as e:
            raise LocktuneError(f"{rel}: spatch ({patch}) ran longer than {e.timeout} s") from e
        if res.returncode != 0:
            why = " ".join((res.stderr or res.stdout).split())[-400:]
            raise LocktuneError(f"{rel}: spatch ({patch}) failed: {why}")
        records = [json.loads(ln) for ln in log_file.read_text().splitlines() if ln.strip()]
        log_file.unlink(missing_ok=True)
        return records

    def close(self) -> None:
        self._tmp.cleanup()

    def run_pass(
        self, name: str, workdir: Path, rel: str, site_map: dict, timeout: float | None = None
    ) -> PassResult:
        """Run pass `name` on workdir/rel in place; return the new text and the sites found.

        `site_map` is this file's entry for LOCKTUNE_SITE_MAP (rel + current->original lines).
        Raises SpatchFailure when spatch fails or runs longer than `timeout` seconds.
        """
        src = workdir / rel
        tag = re.sub(r"[^\w]", "_", rel) + "." + name
        map_file = self.tmp / f"{tag}.map.json"
        log_file = self.tmp / f"{tag}.sites.jsonl"
        out_file = self.tmp / f"{tag}.out"
        map_file.write_text(json.dumps({rel: site_map}))
        log_file.write_text("")
        cmd = spatch_command(self.patches[name], rel, str(out_file))
        env = spatch_env(
            self.cocci_dir, LOCKTUNE_SITE_MAP=str(map_file), LOCKTUNE_SITE_LOG=str(log_file)
        )
        try:
            res = subprocess.run(
                cmd,
                cwd=workdir,
                env=env,
                capture_output=True,
                text=True,
                timeout=timeout or SPATCH_TIMEOUT_S,
            )
        except subprocess.TimeoutExpired as e:
            raise SpatchFailure(
                f"{rel}: spatch ({name}) ran longer than {e.timeout:g} s", name, None
            ) from e
        unchanged = "no modified files" in res.stderr + res.stdout
        if res.returncode != 0 and not unchanged:
            why = " ".join((res.stderr or res.stdout).split())[-400:]
            raise SpatchFailure(f"{rel}: spatch ({name}) failed: {why}", name, why)
        before = src.read_text()
        text = before if unchanged or not out_file.exists() else out_file.read_text()
        sites = [json.loads(line) for line in log_file.read_text().splitlines() if line.strip()]
        for f in (map_file, log_file, out_file):
            f.unlink(missing_ok=True)
        if text != before:
            src.write_text(text)
        return PassResult(text, sites)


def locate_failure(passes: CocciPasses, name: str, text: str, rel: str, runs: int = 16) -> int:
    """The first line of the top-level declaration or function of `text` on which pass
    `name` fails, found by bisection: spatch runs on copies of the file where the other
    top-level elements are blank lines (every line keeps its number).  1 when the failure
    cannot be pinned to one element (it needs several together)."""
    from locktune.rewrite import clex

    elements = _top_level(clex.tokens(text))
    if not elements:
        return 1
    lines = text.splitlines(keepends=True)
    owner = [-1] * (len(lines) + 2)  # line -> element, -2 for lines shared by several
    for n, (first, last) in enumerate(elements):
        for ln in range(first, last + 1):
            owner[ln] = n if owner[ln] in (-1, n) else -2
    with tempfile.TemporaryDirectory(prefix="locktune-locate-", dir=passes.tmp) as tmp:
        work = Path(tmp)
        (work / rel).parent.mkdir(parents=True, exist_ok=True)

        def fails(keep: range) -> bool:
            nonlocal runs
            runs -= 1
            kept = "".join(
                ln if owner[i + 1] in (-1, -2) or owner[i + 1] in keep else "\n"
                for i, ln in enumerate(lines)
            )
            (work / rel).write_text(kept)
            try:
                passes.run_pass(name, work, rel, {"rel": rel, "lines": {}}, AUTO_TIMEOUT_S)
            except SpatchFailure as e:
                return e.why is not None
            return False

        if fails(range(0)):
            return 1  # in what every copy keeps: a directive
        span = range(len(elements))
        while len(span) > 1 and runs > 1:
            half = len(span) // 2
            if fails(span[:half]):
                span = span[:half]
            elif fails(span[half:]):
                span = span[half:]
            else:
                return 1
        return elements[span[0]][0]


def _top_level(toks) -> list[tuple[int, int]]:
    """(first line, last line) of each top-level element: a declaration up to its `;`, a
    function up to its closing brace.  Directives belong to no element."""
    out: list[tuple[int, int]] = []
    depth, first, in_dir = 0, None, False
    for t in toks:
        if t.bol:
            in_dir = t.text == "#"
        if in_dir:
            continue
        if first is None:
            first = t.line
        if t.text in ("(", "[", "{"):
            depth += 1
        elif t.text in (")", "]", "}"):
            depth -= 1
            if depth == 0 and t.text == "}":
                out.append((first, t.line))
                first = None
        elif t.text == ";" and depth == 0:
            out.append((first, t.line))
            first = None
    if first is not None:
        out.append((first, toks[-1].line))
    return out


def spatch_version() -> str | None:
    try:
        res = subprocess.run([spatch_path(), "--version"], capture_output=True, text=True)
    except (OSError, LocktuneError):
        return None
    first = (res.stdout or "").splitlines()
    return first[0].strip() if first else None
