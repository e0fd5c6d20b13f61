"""The lock algorithms liblocktune registers, and what each can do.

The runtime owns the list (runtime/src/algorithms.def); the build writes it, with each
algorithm's capabilities read from its operations table, to share/locktune/algorithms.json
(schema locktune-algorithms/1, by locktune-algorithms).  Everything in Python that names or
checks an algorithm asks this module; nothing else writes the list out.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass

from locktune import native
from locktune.errors import LocktuneError

SCHEMA = "locktune-algorithms/1"


@dataclass(frozen=True)
class Algorithm:
    name: str
    wait: str  # its waiting policy, in words
    delegates: bool  # lt_execute may run the section on another thread
    supports_cond: bool
    blocking: bool  # waiters eventually sleep in the kernel
    fifo: bool  # strict FIFO hand-off
    oversub_safe: bool  # holds up with more runnable threads than CPUs
    server: bool  # sections run on server threads placed per site (a site's .server)


@functools.cache
def registered() -> tuple[Algorithm, ...]:
    """Every registered algorithm, in the runtime's order."""
    path = native.native_dir() / "share" / "locktune" / "algorithms.json"
    try:
        doc = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as e:
        raise LocktuneError(f"{path}: unreadable ({e}); rebuild with `pip install .`") from e
    if doc.get("schema") != SCHEMA:
        raise LocktuneError(f"{path}: schema {doc.get('schema')!r}, expected {SCHEMA}")
    fields = Algorithm.__dataclass_fields__
    return tuple(Algorithm(**{k: a[k] for k in fields}) for a in doc["algorithms"])


def names() -> list[str]:
    return [a.name for a in registered()]


def get(name: str) -> Algorithm | None:
    return next((a for a in registered() if a.name == name), None)


def delegating() -> set[str]:
    """lt_execute ships the section to another thread (a combiner or a server)."""
    return {a.name for a in registered() if a.delegates}


def server_based() -> set[str]:
    """Sections run on server threads: a site names its server, clients keep off its CPU."""
    return {a.name for a in registered() if a.server}
