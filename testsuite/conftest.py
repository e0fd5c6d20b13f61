"""Shared fixtures: the installed `locktune` command, its native parts, a C compiler."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def script_module(name: str, key: str):
    """scripts/NAME loaded as module KEY (registered first: its dataclasses look their module
    up by name).  The real-program runner and its recipes are scripts, not package modules."""
    import importlib.util
    import sys

    if key not in sys.modules:
        spec = importlib.util.spec_from_file_location(key, ROOT / "scripts" / name)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[key] = mod
        spec.loader.exec_module(mod)
    return sys.modules[key]


@pytest.fixture(scope="session")
def locktune_bin() -> str:
    path = shutil.which("locktune")
    if path is None:
        pytest.fail("`locktune` is not on PATH: run scripts/bootstrap (or scripts/test)")
    return path


@pytest.fixture(scope="session")
def run_locktune(locktune_bin):
    """Run `locktune ARGS...`; returns the CompletedProcess (text mode)."""

    def run(*args: str, check: bool = False, **kw) -> subprocess.CompletedProcess:
        res = subprocess.run(
            [locktune_bin, *args], capture_output=True, text=True, timeout=600, **kw
        )
        if check and res.returncode != 0:
            pytest.fail(f"locktune {' '.join(args)} exited {res.returncode}: {res.stderr}")
        return res

    return run


@pytest.fixture(scope="session")
def native_dir():
    from locktune import native

    return native.native_dir()


@pytest.fixture(scope="session")
def cc():
    """Compile C sources: cc(out, *sources, flags=[...]) -> Path of the executable."""

    def compile_(out: Path, *sources: Path | str, flags: list[str] | None = None) -> Path:
        cmd = ["cc", "-O2", "-g", "-Wall", "-Wextra", "-Werror", "-o", str(out), *map(str, sources)]
        cmd += flags or []
        res = subprocess.run(cmd, capture_output=True, text=True)
        if res.returncode != 0:
            pytest.fail(f"compile failed: {' '.join(cmd)}\n{res.stderr}")
        return out

    return compile_


def runtime_flags(native_dir: Path) -> list[str]:
    """cc flags for a program that calls the runtime installed in native_dir."""
    lib = native_dir / "lib"
    inc = native_dir / "include"
    return ["-I", str(inc), "-L", str(lib), f"-Wl,-rpath,{lib}", "-llocktune", "-pthread"]


def clean_env(**extra: str) -> dict[str, str]:
    """The environment minus anything locktune reads, plus `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LOCKTUNE_", "LD_"))}
    env.update(extra)
    return env
