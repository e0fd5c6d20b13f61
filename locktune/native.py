"""Where the native parts live: liblocktune, the profiler library, locktune-extract, patches.

`pip install .` ships them inside the package as ``locktune/_native``.  Running from a source
checkout without installing, the CMake stage directory ``build/stage`` is used instead.
"""

from __future__ import annotations

import os
from pathlib import Path

from locktune.errors import LocktuneError

_PACKAGE_DIR = Path(__file__).resolve().parent


def native_dir() -> Path:
    """The installed native tree (lib/, bin/, include/, share/locktune/)."""
    candidates = [_PACKAGE_DIR / "_native", _PACKAGE_DIR.parent / "build" / "stage"]
    for c in candidates:
        if (c / "lib").is_dir():
            return c
    raise LocktuneError(
        f"locktune's native parts are not installed (looked in {', '.join(map(str, candidates))}); "
        "run `pip install .` or scripts/bootstrap"
    )


def lib_dir() -> Path:
    return native_dir() / "lib"


def include_dir() -> Path:
    return native_dir() / "include"


def bin_path(name: str) -> Path:
    p = native_dir() / "bin" / name
    if not os.access(p, os.X_OK):
        raise LocktuneError(f"{p}: missing; rebuild with `pip install .`")
    return p


def runtime_library() -> Path:
    return lib_dir() / "liblocktune.so"


def profiler_library() -> Path:
    return lib_dir() / "liblocktune-prof.so"


def cocci_dir() -> Path:
    return native_dir() / "share" / "locktune" / "cocci"


def pkgconfig_dir() -> Path:
    return lib_dir() / "pkgconfig"


def cflags() -> list[str]:
    """Compiler flags for rewritten code (`locktune flags --cflags`)."""
    return [f"-I{include_dir()}"]


def libs(static: bool = False) -> list[str]:
    """Linker flags for rewritten code (`locktune flags --libs`)."""
    lib = lib_dir()
    if static:
        return [str(lib / "liblocktune.a"), "-pthread"]
    # rpath: the program finds liblocktune.so without LD_LIBRARY_PATH.  --no-as-needed around
    # it: a build that puts LDFLAGS before its objects (zstd) under --as-needed would drop
    # liblocktune before any object asked for it.
    return [
        f"-L{lib}",
        f"-Wl,-rpath,{lib}",
        "-Wl,--push-state,--no-as-needed",
        "-llocktune",
        "-Wl,--pop-state",
        "-pthread",
    ]
