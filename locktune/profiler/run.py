"""Run a program under liblocktune-prof.so and collect its raw files.

The program inherits this process's standard streams, so its output is its own; its exit
status is recorded.  SIGINT from a terminal reaches the program directly (same process
group); SIGTERM or SIGINT sent to locktune itself is forwarded to the program.  Either way the
raw files survive: they are the profiler's memory (profiler/src/layout.h).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile

from locktune import native
from locktune.errors import LocktuneError, UsageProblem


@dataclass
class RunResult:
    pid: int
    returncode: int  # negative: killed by that signal
    wall_ns: int
    raw_dir: Path
    stdout: str | None = None  # with capture=True

    def describe(self) -> dict:
        if self.returncode < 0:
            sig = -self.returncode
            try:
                name = signal.Signals(sig).name
            except ValueError:
                name = f"signal {sig}"
            return {"status": None, "signal": name}
        return {"status": self.returncode, "signal": None}


def find_program(name: str) -> str:
    """The executable `name` as exec would find it; UsageProblem when there is none."""
    if os.sep in name:
        if not os.path.isfile(name):
            raise UsageProblem(f"{name}: no such program")
        if not os.access(name, os.X_OK):
            raise UsageProblem(f"{name}: not executable")
        return name
    path = shutil.which(name)
    if path is None:
        raise UsageProblem(f"{name}: command not found")
    return path


def check_interposable(path: str) -> None:
    """A statically linked executable cannot be interposed with LD_PRELOAD: say so."""
    try:
        with open(path, "rb") as f:
            if f.read(4) != b"\x7fELF":
                return  # a script: its interpreter is what runs
            f.seek(0)
            elf = ELFFile(f)
            kinds = {seg["p_type"] for seg in elf.iter_segments()}
    except (OSError, ELFError):
        return
    if "PT_INTERP" not in kinds:
        raise LocktuneError(
            f"{path}: statically linked: LD_PRELOAD cannot interpose its pthread calls, so "
            "nothing could be profiled; link it dynamically"
        )


def clock_info() -> dict:
    """This machine's clock (TSC rate, Ordo boundary) from `locktune-probe --clock`, cached
    per boot: an invariant TSC's offsets between cores do not change until a reset."""
    cache_dir = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "locktune"
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        boot = None
    cpus = sorted(os.sched_getaffinity(0))
    cache = cache_dir / "clock.json"
    if boot:
        try:
            doc = json.loads(cache.read_text())
            if doc.get("boot_id") == boot and doc.get("cpus_allowed") == cpus:
                return doc
        except (OSError, ValueError):
            pass
    probe = native.bin_path("locktune-probe")
    out = subprocess.run(
        [str(probe), "--clock", "--runs", "3000"], capture_output=True, text=True, timeout=120
    )
    if out.returncode != 0:
        raise LocktuneError(f"{probe} --clock failed: {out.stderr.strip()}")
    doc = json.loads(out.stdout)
    doc["boot_id"] = boot
    doc["cpus_allowed"] = cpus
    if boot:
        try:
            cache_dir.mkdir(parents=True, exist_ok=True)
            tmp = cache.with_suffix(".tmp")
            tmp.write_text(json.dumps(doc))
            tmp.replace(cache)
        except OSError:
            pass
    return doc


def run(
    argv: list[str],
    raw_dir: Path | None = None,
    pmu: str = "auto",
    env: dict | None = None,
    capture: bool = False,
    timeout: float | None = None,
    sample: int = 16,
    stdin=None,
    stdout=None,
    library: Path | None = None,
) -> RunResult:
    """Run argv with the profiler preloaded; raw files go to raw_dir (a new temporary
    directory when None).  capture=True collects the program's standard output instead of
    passing it through; `timeout` kills it (SIGKILL) after that many seconds.  stdin and
    stdout (without capture) are handed to subprocess.Popen as they are.  `library`: another
    liblocktune-prof.so than this installation's (an older build, for a side-by-side
    benchmark)."""
    lib = Path(library) if library else native.profiler_library()
    if not lib.exists():
        raise LocktuneError(f"{lib}: missing; rebuild with `pip install .`")
    if raw_dir is None:
        raw_dir = Path(tempfile.mkdtemp(prefix="locktune-prof-"))
    raw_dir = Path(raw_dir).resolve()
    raw_dir.mkdir(parents=True, exist_ok=True)
    child_env = dict(os.environ if env is None else env)
    preload = child_env.get("LD_PRELOAD", "")
    child_env["LD_PRELOAD"] = f"{lib}:{preload}" if preload else str(lib)
    child_env["LOCKTUNE_PROF_DIR"] = str(raw_dir)
    child_env["LOCKTUNE_PMU_EVENT"] = "" if pmu == "auto" else pmu
    child_env["LOCKTUNE_PROF_SAMPLE"] = str(sample)

    start = time.monotonic_ns()
    try:
        proc = subprocess.Popen(
            argv,
            env=child_env,
            stdin=stdin,
            stdout=subprocess.PIPE if capture else stdout,
            text=capture,
        )
    except OSError as e:
        raise LocktuneError(f"{argv[0]}: cannot run: {e.strerror}") from e

    def forward(signum, _frame):
        try:
            proc.send_signal(signum)
        except OSError:
            pass

    def note(_signum, _frame):
        pass  # a terminal's SIGINT reaches the program itself; wait for it to end

    old_term = signal.signal(signal.SIGTERM, forward)
    old_int = signal.signal(signal.SIGINT, note if os.isatty(0) else forward)
    out = None
    try:
        try:
            out, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
        rc = proc.returncode
    finally:
        signal.signal(signal.SIGTERM, old_term)
        signal.signal(signal.SIGINT, old_int)
    return RunResult(proc.pid, rc, time.monotonic_ns() - start, raw_dir, out)
