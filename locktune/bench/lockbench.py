"""Run ``locktune-lockbench`` once and check the JSON document it prints.

The program's interface (docs/bench.md) is shared with `locktune calibrate`:

    locktune-lockbench --lock pthread|lt|ticket|none --mode lock|execute|sequential|roundtrip|info
                       --threads N --duration S | --ops N --lines K --delay CYCLES --json ...

``--lock lt`` runs the algorithm LOCKTUNE_ALGO names (``default=NAME``).  An algorithm this
liblocktune does not have makes the program exit 2 with one line saying so; `available()`
asks once per algorithm, so a sweep can report it instead of failing.
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass, field

from locktune import algorithms, native
from locktune.errors import LocktuneError

SCHEMA = "locktune-lockbench/1"
PROGRAM = "locktune-lockbench"


class RunFailed(LocktuneError):
    """One run of the program failed; the sweep records it and goes on."""


@dataclass(frozen=True)
class Lock:
    """A lock under test: glibc's mutex, the bare ticket lock, or an lt_mutex_t algorithm."""

    kind: str  # pthread | ticket | lt | none (one thread only) | sequential | ck-*
    algorithm: str | None = None

    @property
    def label(self) -> str:
        if self.kind.startswith("ck-"):
            return self.kind
        return {
            "pthread": "glibc",
            "ticket": "bare-ticket",
            "none": "no-lock",
            "sequential": "sequential",
        }.get(self.kind, self.algorithm or "?")


GLIBC = Lock("pthread")
BARE_TICKET = Lock("ticket")
NO_LOCK = Lock("none")  # the harness and the section alone: subtracted for the net lock cost
SEQUENTIAL = Lock("sequential")
# Concurrency Kit's spinlocks (Debian libck-dev), the peers of our algorithms of the same name:
# run beside them uncontended and at 2 threads; each of ours is reported against its peer.
PEERS = {"mcs": Lock("ck-mcs"), "clh": Lock("ck-clh"), "ticket": Lock("ck-ticket")}


def program() -> str:
    return str(native.bin_path(PROGRAM))


def _env(extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOCKTUNE_")}
    env.update(extra)
    return env


def _error_line(stderr: str, rc: int) -> str:
    lines = [ln.strip() for ln in stderr.strip().splitlines() if ln.strip()]
    line = lines[-1] if lines else f"exited with status {rc} and said nothing"
    for prefix in (f"{PROGRAM}: error: ", f"{PROGRAM}: "):
        if line.startswith(prefix):
            return line[len(prefix) :]
    return line


def run(args: list[str], env: dict[str, str] | None = None, timeout: float = 600) -> dict:
    """Run the program with `args` (``--json`` is added) and return its checked document."""
    cmd = [program(), *args, "--json"]
    try:
        res = subprocess.run(
            cmd, capture_output=True, text=True, timeout=timeout, env=_env(env or {})
        )
    except subprocess.TimeoutExpired:
        raise RunFailed(f"did not finish within {timeout:.0f} s") from None
    doc = None
    if res.stdout.strip():
        try:
            doc = json.loads(res.stdout)
        except json.JSONDecodeError as e:
            raise RunFailed(f"printed invalid JSON ({e})") from None
    if res.returncode != 0:
        raise RunFailed(_error_line(res.stderr, res.returncode))
    if doc is None:
        raise RunFailed("printed nothing")
    problems = validate(doc)
    if problems:
        raise RunFailed("unexpected output: " + "; ".join(problems[:3]))
    return doc


def peer_available(lock: Lock) -> str | None:
    """None when this locktune-lockbench has `lock` (a CK peer), else why not."""
    try:
        run(["--mode", "info", "--lock", lock.kind])
    except RunFailed as e:
        return str(e)
    return None


@dataclass
class Availability:
    available: dict[str, dict] = field(default_factory=dict)  # name -> info document
    unavailable: dict[str, str] = field(default_factory=dict)  # name -> why


def available(names: list[str], usable_cpus: int) -> Availability:
    """Which algorithms this liblocktune has: asks the program once per name."""
    out = Availability()
    for name in names:
        base = name.partition(":")[0]  # NAME:POLICY runs NAME under that waiting policy
        if base in algorithms.server_based() and usable_cpus < 2:
            out.unavailable[name] = "needs a server CPU and a client CPU; 1 CPU is usable"
            continue
        try:
            doc = run(["--mode", "info", "--lock", "lt"], env={"LOCKTUNE_ALGO": f"default={name}"})
        except RunFailed as e:
            out.unavailable[name] = str(e)
            continue
        bound = doc["info"]["algorithm"]
        if bound != base:
            out.unavailable[name] = f"liblocktune bound '{bound}' when asked for '{name}'"
        else:
            out.available[name] = doc
    return out


def machine_info() -> dict:
    """The program's view of the machine: TSC rate, usable CPUs, lock sizes."""
    return run(["--mode", "info", "--lock", "pthread"])


# ---- the document's shape ------------------------------------------------------------------

_NUMBER = (int, float)
_NUMBER_OR_NULL = (int, float, type(None))  # null: no section completed in the interval
_RUN_FIELDS = {
    "run": {
        "elapsed_s": _NUMBER,
        "ops": int,
        "ops_all_phases": int,
        "throughput_ops_s": _NUMBER,
        "ns_per_op": _NUMBER_OR_NULL,
        "cycles_per_op": _NUMBER_OR_NULL,
        "cs_latency_cycles": _NUMBER_OR_NULL,
        "per_thread_ops": list,
    },
    "fairness": {
        "rsd": _NUMBER,
        "gini": _NUMBER,
        "min_max_ratio": _NUMBER,
        "fairness_factor": _NUMBER,
    },
    "distinct_threads": {"window": int, "windows": int},
    "handover": {
        "sampled": int,
        "handovers": int,
        "same_thread": int,
        "same_thread_fraction": _NUMBER,
        "ns": dict,
    },
    "cpu": {"utilisation": _NUMBER, "voluntary_switches": int, "involuntary_switches": int},
    "check": {"ok": bool, "expected": int},
}
_CONFIG_FIELDS = {
    "mode": str,
    "lock": str,
    "threads": int,
    "lines": int,
    "delay_cycles": int,
    "pin": str,
    "cpus": list,
    "window": int,
}


def validate(doc: dict) -> list[str]:
    """What is wrong with a document (empty when it has the schema's shape)."""
    problems = []
    if not isinstance(doc, dict):
        return ["not a JSON object"]
    if doc.get("schema") != SCHEMA:
        problems.append(f"schema is {doc.get('schema')!r}, not {SCHEMA!r}")
    config = doc.get("config")
    if not isinstance(config, dict):
        return problems + ["no config"]
    for key, kind in _CONFIG_FIELDS.items():
        if not isinstance(config.get(key), kind):
            problems.append(f"config.{key} missing or not {kind}")
    if not isinstance(doc.get("tsc", {}).get("hz"), _NUMBER):
        problems.append("tsc.hz missing")
    mode = config.get("mode")
    if mode == "roundtrip":
        if not isinstance(doc.get("roundtrip"), dict):
            problems.append("roundtrip missing")
        return problems
    if mode == "info":
        if not isinstance(doc.get("info"), dict):
            problems.append("info missing")
        return problems
    for section, fields in _RUN_FIELDS.items():
        part = doc.get(section)
        if not isinstance(part, dict):
            problems.append(f"{section} missing")
            continue
        for key, kind in fields.items():
            value = part.get(key)
            is_bool = isinstance(value, bool) and kind is not bool  # bool is an int subclass
            wrong = key not in part or not isinstance(value, kind) or is_bool
            if wrong:
                problems.append(f"{section}.{key} missing or not {kind}")
    per_thread = doc.get("run", {}).get("per_thread_ops")
    if isinstance(per_thread, list) and len(per_thread) != config.get("threads"):
        problems.append("run.per_thread_ops has one entry per thread")
    if isinstance(per_thread, list) and sum(per_thread) != doc.get("run", {}).get("ops"):
        problems.append("run.per_thread_ops does not add up to run.ops")
    if "probe" not in doc:
        problems.append("probe missing (null when --no-probe)")
    return problems


def round_trip_ns(doc: dict) -> float | None:
    """The run's core-to-core round trip: the mean of the probes before and after it."""
    probe = doc.get("probe") or {}
    values = [
        p["ns_median"]
        for p in (probe.get("before"), probe.get("after"))
        if isinstance(p, dict) and p.get("ok")
    ]
    return sum(values) / len(values) if values else None
