"""The pipeline on one program with a make build, step by step, into one output folder.

Each step is the command a user would type (`locktune profile ...`, `make ...`), run as a
subprocess and appended to OUT/commands.sh, so the folder says how every artefact in it was
made and the whole run can be replayed by hand:

    OUT/original/        the program's tree, built by its own Makefile under bear
                         (compile_commands.json: each file's real flags, for the rewriter)
    OUT/profile.json     locktune profile of a run of the original
    OUT/report.txt/.html locktune report
    OUT/rewritten/       locktune rewrite --profile: the rewritten tree and locktune_config.h,
                         then built by the same Makefile with `locktune flags`
    OUT/rewrite.json     the rewrite report
    OUT/compare/         locktune bench compare: results.json, charts
    OUT/*.log            what each step printed
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from locktune.errors import LocktuneError


class StepFailed(LocktuneError):
    """A step's command failed: the message names it and its log."""


def locktune_command() -> list[str]:
    """The `locktune` command of this installation (the one on PATH beside this Python)."""
    beside = Path(sys.executable).with_name("locktune")
    if beside.exists():
        return [str(beside)]
    found = shutil.which("locktune")
    return [found] if found else [sys.executable, "-m", "locktune"]


@dataclass
class Pipeline:
    out: Path
    env: dict[str, str] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.out = self.out.resolve()
        self.out.mkdir(parents=True, exist_ok=True)
        self.script = self.out / "commands.sh"
        if not self.script.exists():
            self.script.write_text(
                "#!/bin/sh\n# The commands that made this folder, in order.\nset -e\n"
            )
        self.lt = locktune_command()

    # ---- running commands ----------------------------------------------------------------

    def _shown(self, argv: list[str], cwd: Path | None) -> str:
        """The command as a person types it: `locktune ...`, in its directory."""
        if argv[: len(self.lt)] == self.lt:
            argv = ["locktune", *argv[len(self.lt) :]]
        text = shlex.join(argv)
        return text if cwd is None else f"(cd {shlex.quote(str(cwd))} && {text})"

    def run(
        self,
        name: str,
        argv: list[str],
        cwd: Path | None = None,
        shown: str | None = None,
        stderr_to_terminal: bool = False,
        timeout: float = 1800,
        ok: tuple[int, ...] = (0,),
    ) -> subprocess.CompletedProcess:
        """Run one step's command; its output goes to OUT/NAME.log (stdout also returned).
        With stderr_to_terminal, the command's progress line shows on a terminal."""
        line = shown or self._shown(argv, cwd)
        with open(self.script, "a") as f:
            f.write(line + "\n")
        env = {k: v for k, v in os.environ.items() if not k.startswith("LOCKTUNE_")}
        env.pop("LD_PRELOAD", None)
        env.update(self.env)
        log = self.out / f"{name}.log"
        t0 = time.monotonic()
        try:
            res = subprocess.run(
                argv,
                cwd=cwd,
                env=env,
                stdout=subprocess.PIPE,
                stderr=None if stderr_to_terminal and sys.stderr.isatty() else subprocess.PIPE,
                text=True,
                timeout=timeout,
            )
        except subprocess.TimeoutExpired:
            raise StepFailed(f"{name}: `{line}` ran longer than {timeout:.0f} s") from None
        self.timings[name] = time.monotonic() - t0
        log.write_text(f"$ {line}\n{res.stdout}{res.stderr or ''}")
        if res.returncode not in ok:
            text = (res.stderr or "") + res.stdout
            last = [ln for ln in text.strip().splitlines() if ln.strip()]
            why = last[-1].strip() if last else f"exit status {res.returncode}"
            raise StepFailed(f"{name}: `{line}` failed: {why} (log: {log})")
        return res

    # ---- the steps -------------------------------------------------------------------------

    def copy_source(self, src: Path, name: str = "original") -> Path:
        """A pristine copy of the program's tree (build products of the source left behind)."""
        tree = self.out / name
        if tree.exists():
            shutil.rmtree(tree)
        shutil.copytree(src, tree, ignore=shutil.ignore_patterns("*.o", ".git"))
        binary = tree / src.name
        if binary.is_file() and os.access(binary, os.X_OK):
            binary.unlink()
        return tree

    def build_original(self, tree: Path) -> None:
        """The program's own build under bear, which records compile_commands.json."""
        self.run("build-original", ["bear", "--", "make"], cwd=tree)
        if not (tree / "compile_commands.json").exists():
            raise StepFailed(f"build-original: bear wrote no {tree / 'compile_commands.json'}")

    def profile(self, tree: Path, argv: list[str]) -> dict:
        """locktune profile of one run of the original; returns profile.json."""
        from locktune.profiler import document

        path = self.out / "profile.json"
        self.run(
            "profile",
            [*self.lt, "profile", "-o", str(path), "--source-root", str(tree), "--", *argv],
            cwd=tree,
        )
        return document.read(path)

    def report(self, top: int = 5) -> str:
        """locktune report: the table (returned, and in report.txt) and report.html."""
        res = self.run(
            "report",
            [
                *self.lt,
                "report",
                str(self.out / "profile.json"),
                "--top",
                str(top),
                "--html",
                str(self.out / "report.html"),
            ],
        )
        (self.out / "report.txt").write_text(res.stdout)
        return res.stdout

    def rewrite(self, tree: Path, extra: list[str] = ()) -> tuple[Path, str]:
        """locktune rewrite with the profile: OUT/rewritten and OUT/rewrite.json."""
        dest = self.out / "rewritten"
        res = self.run(
            "rewrite",
            [
                *self.lt,
                "rewrite",
                "--compile-commands",
                str(tree / "compile_commands.json"),
                "--profile",
                str(self.out / "profile.json"),
                "--out",
                str(dest),
                "--report",
                str(self.out / "rewrite.json"),
                *extra,
                str(tree),
            ],
        )
        return dest, res.stdout

    def build_rewritten(self, tree: Path) -> None:
        """The same Makefile, with liblocktune's compile and link flags."""
        from locktune import native

        self.run("clean-rewritten", ["make", "clean"], cwd=tree)
        cflags, libs = " ".join(native.cflags()), " ".join(native.libs())
        self.run(
            "build-rewritten",
            ["make", f"CPPFLAGS={cflags}", f"LDLIBS={libs}"],
            cwd=tree,
            shown=f"(cd {shlex.quote(str(tree))} && "
            'make CPPFLAGS="$(locktune flags --cflags)" LDLIBS="$(locktune flags --libs)")',
        )

    def compare(
        self,
        original: Path,
        rewritten: Path,
        argv: list[str],
        options: list[str],
        name: str = "compare",
    ) -> tuple[dict, str]:
        """locktune bench compare of the two built trees: its results.json and its table."""
        import json

        dest = self.out / name
        res = self.run(
            name,
            [
                *self.lt,
                "bench",
                "compare",
                str(original),
                str(rewritten),
                "--no-build",
                "--out",
                str(dest),
                *options,
                "--",
                *argv,
            ],
            stderr_to_terminal=True,
            ok=(0, 1),  # 1: some runs failed; the results say which
        )
        return json.loads((dest / "results.json").read_text()), res.stdout
