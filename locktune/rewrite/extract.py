"""Running locktune-extract (refactor/, Clang LibTooling) and reading its report.

The agreed interface (docs/rewrite.md):

    locktune-extract --out-dir DIR --source-root ROOT --report FILE
                     [--lock-wrapper NAME=ROLE]... FILE... -- CFLAGS     (or -p BUILD_DIR)

writes the rewritten version of each FILE whose text changed to DIR/<path relative to
ROOT> and a JSON report (schema locktune-extract/1): critical_sections[], lock_sites[],
diagnostics[].  Exit status 1 when a file did not parse (it is then not rewritten).

A locktune-extract that cannot extract yet (only --list) or is not installed still leaves a
correct program: the semantic patches retarget every lock/unlock pair, and the sections
are reported as kept, with that reason.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from locktune import native
from locktune.errors import LocktuneError
from locktune.rewrite import callgraph

EXTRACT_TIMEOUT_S = 600
_DIAG = re.compile(r"^(?P<file>[^:\n]+):(?P<line>\d+):(?:\d+:)? (?:fatal )?error: (?P<msg>.*)$")


@dataclass
class Flags:
    """How each file is compiled: a compilation database directory, or flags for all."""

    build_dir: Path | None = None
    cflags: list[str] = field(default_factory=list)
    db_files: set[Path] | None = None  # absolute paths the database knows

    def args(self, files: list[str]) -> list[str]:
        # Rewritten code (a second run) includes locktune.h: the runtime's headers are
        # always on the include path.
        runtime = f"-I{native.include_dir()}"
        if self.build_dir is not None:
            return [f"--extra-arg={runtime}", "-p", str(self.build_dir), *files]
        return [*files, "--", *self.cflags, runtime]


def load_compile_commands(path: Path, workdir: Path) -> Flags:
    """Flags from a compile_commands.json (any name: it is copied as the tool wants it)."""
    try:
        entries = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise LocktuneError(f"{path}: not a compilation database: {e}") from e
    if not isinstance(entries, list):
        raise LocktuneError(f"{path}: not a compilation database (expected a JSON array)")
    files = set()
    for e in entries:
        f = Path(e.get("file", ""))
        if not f.is_absolute():
            f = Path(e.get("directory", ".")) / f
        files.add(f.resolve())
    build_dir = path.parent
    if path.name != "compile_commands.json":
        build_dir = workdir / "compile-db"
        build_dir.mkdir(exist_ok=True)
        shutil.copyfile(path, build_dir / "compile_commands.json")
    return Flags(build_dir=build_dir, db_files=files)


@dataclass
class ExtractResult:
    mode: str  # "extract" | "list" | "none"
    reason: str | None  # why sections are not extracted (mode != "extract")
    sections: list[dict] = field(default_factory=list)
    lock_sites: list[dict] = field(default_factory=list)
    diagnostics: list[dict] = field(default_factory=list)
    version: str | None = None
    # The files whose translation unit parsed (None: the tool does not say), and those that
    # did not, each with the first error of its translation unit.
    files_analysed: set[str] | None = None
    files_failed: list[dict] = field(default_factory=list)


def tool() -> Path | None:
    try:
        return native.bin_path("locktune-extract")
    except LocktuneError:
        return None


def capabilities(path: Path) -> str:
    """'extract' when the tool rewrites (--out-dir), 'list' when it only lists calls."""
    res = subprocess.run([str(path), "--help"], capture_output=True, text=True, timeout=60)
    return "extract" if "--out-dir" in res.stdout + res.stderr else "list"


def run(
    files: list[str],
    source_root: Path,
    stage: Path,
    flags: Flags,
    wrappers: dict[str, str],
    listing: dict | None = None,
) -> ExtractResult:
    """Extract the sections of `files` (relative to source_root) into `stage`.  `listing`:
    list_functions()'s answer when the caller already has it."""
    path = tool()
    if path is None:
        return ExtractResult("none", "locktune-extract is not installed")
    if not files:
        return ExtractResult(capabilities(path), None)
    mode = capabilities(path)
    abs_files = [str(source_root / f) for f in files]
    with tempfile.TemporaryDirectory(prefix="locktune-extract-") as tmp:
        if mode == "extract":
            report = Path(tmp) / "report.json"
            cmd = [
                str(path),
                "--out-dir",
                str(stage),
                "--source-root",
                str(source_root),
                "--report",
                str(report),
            ]
            for name, role in sorted(wrappers.items()):
                cmd += ["--lock-wrapper", f"{name}={role}"]
            facts = Path(tmp) / "callee-facts.json"
            if listing is None:
                listing = _list_functions(path, abs_files, source_root, flags)
            facts.write_text(
                json.dumps(
                    callgraph.close(listing.get("functions", []), listing.get("pointers", []))
                )
            )
            cmd += ["--callee-facts", str(facts)]
            cmd += flags.args(abs_files)
        else:
            report = None
            cmd = [str(path), "--list", *flags.args(abs_files)]
        try:
            res = subprocess.run(cmd, capture_output=True, text=True, timeout=EXTRACT_TIMEOUT_S)
        except subprocess.TimeoutExpired as e:
            raise LocktuneError(f"locktune-extract ran longer than {e.timeout} s") from e
        if res.returncode not in (0, 1):
            tail = " ".join(res.stderr.split())[-300:]
            raise LocktuneError(f"locktune-extract failed (exit {res.returncode}): {tail}")
        out = res.stdout if report is None else _read(report, res)
    try:
        doc = json.loads(out) if out.strip() else {}
    except json.JSONDecodeError as e:
        raise LocktuneError(f"locktune-extract: unreadable report: {e}") from e
    diagnostics = _diagnostics(doc.get("diagnostics"), res.stderr, source_root)
    if mode == "extract":
        return ExtractResult(
            mode,
            None,
            sections=doc.get("critical_sections", []),
            lock_sites=doc.get("lock_sites", []),
            diagnostics=diagnostics,
            files_analysed=(
                {_rel(f, source_root) for f in doc["files_analysed"]}
                if "files_analysed" in doc
                else None
            ),
            files_failed=[
                dict(
                    f,
                    file=_rel(f["file"], source_root),
                    error_file=_rel(f["error_file"], source_root),
                )
                for f in doc.get("files_failed", [])
            ],
        )
    reason = "locktune-extract cannot extract sections yet (it only lists lock calls)"
    return ExtractResult(
        mode, reason, sections=_sections_from_calls(doc, source_root), diagnostics=diagnostics
    )


def list_functions(files: list[str], source_root: Path, flags: Flags) -> dict | None:
    """The whole-program pass over `files` (relative to source_root): `--list-functions`
    (schema locktune-extract-functions/0): each function's facts and calls, for
    callgraph.py, and the lock wrapper functions, for wrappers.functions().  None when the
    tool cannot extract (then nothing uses it)."""
    path = tool()
    if path is None or not files or capabilities(path) != "extract":
        return None
    return _list_functions(path, [str(source_root / f) for f in files], source_root, flags)


def _list_functions(path: Path, abs_files: list[str], source_root: Path, flags: Flags) -> dict:
    """A file that does not parse lists nothing here; the extraction reports it."""
    cmd = [str(path), "--list-functions", "--source-root", str(source_root)]
    try:
        res = subprocess.run(
            cmd + flags.args(abs_files), capture_output=True, text=True, timeout=EXTRACT_TIMEOUT_S
        )
    except subprocess.TimeoutExpired as e:
        raise LocktuneError(
            f"locktune-extract --list-functions ran longer than {e.timeout} s"
        ) from e
    if res.returncode not in (0, 1):
        tail = " ".join(res.stderr.split())[-300:]
        raise LocktuneError(
            f"locktune-extract --list-functions failed (exit {res.returncode}): {tail}"
        )
    try:
        return json.loads(res.stdout)
    except json.JSONDecodeError as e:
        raise LocktuneError(f"locktune-extract --list-functions: unreadable listing: {e}") from e


def _read(report: Path, res: subprocess.CompletedProcess) -> str:
    if report.exists():
        return report.read_text()
    if res.returncode == 0:
        raise LocktuneError("locktune-extract wrote no report")
    return ""


def _rel(path: str, root: Path) -> str:
    p = Path(path)
    if p.is_absolute():
        try:
            return str(p.resolve().relative_to(root.resolve()))
        except ValueError:
            return str(p)
    return str(p)


def _diagnostics(reported, stderr: str, root: Path) -> list[dict]:
    """The tool's diagnostics, or Clang's `file:line:col: error:` lines on stderr."""
    if reported:
        return [dict(d, file=_rel(d.get("file", "?"), root)) for d in reported]
    out = []
    for line in stderr.splitlines():
        m = _DIAG.match(line)
        if m:
            out.append(
                {
                    "file": _rel(m.group("file"), root),
                    "line": int(m.group("line")),
                    "message": m.group("msg"),
                }
            )
    return out


def _sections_from_calls(doc: dict, root: Path) -> list[dict]:
    """Each lock call listed becomes a kept section (the tool could not pair them)."""
    out = []
    for c in doc.get("calls", []):
        if c.get("call") not in ("pthread_mutex_lock", "pthread_mutex_trylock"):
            continue
        out.append(
            {
                "file": _rel(c["file"], root),
                "line": c["line"],
                "end_lines": [],
                "function": c.get("function"),
                "lock": c.get("lock"),
                "lock_key": None,
                "status": "kept",
                "reason": "not extracted: locktune-extract cannot extract sections yet",
                "inputs": [],
                "outputs": [],
            }
        )
    return out
