"""How to run each bundled app (testsuite/apps/, docs/apps.md) at a given thread count.

Every app prints `result: ...` (identical for every thread count and lock algorithm) and last
`throughput: N ops/s`, so `locktune bench compare`'s defaults (--metric, --check) fit them.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class App:
    name: str
    op: str  # what one operation of its throughput is
    hot_lock: str
    args: tuple[str, ...]  # with {threads} where the thread count goes
    quick_args: tuple[str, ...]  # a smaller workload (tests, --quick)
    check: str = r"^result:"  # the deterministic output line (bench compare --check)

    def argv(self, threads: int | str, quick: bool = False) -> list[str]:
        """The command, run in the app's build directory."""
        args = self.quick_args if quick else self.args
        return [f"./{self.name}", *(a.replace("{threads}", str(threads)) for a in args)]


APPS = {
    a.name: a
    for a in (
        App(
            "kvcache",
            "request",
            "cache_lock",
            ("-t", "{threads}"),
            ("-t", "{threads}", "-n", "200000"),
        ),
        App(
            "raytrace",
            "ray",
            "gm->ridlock",
            ("-t", "{threads}"),
            ("-t", "{threads}", "-s", "192", "-r", "2"),
        ),
        App(
            "wordcount",
            "word",
            "table_locks[]",
            ("-t", "{threads}"),
            ("-t", "{threads}", "-n", "500000"),
        ),
        App(
            "bank",
            "transfer",
            "ledger_lock",
            ("{threads}", "400000"),
            ("{threads}", "50000"),
            check=r"^total ",
        ),
    )
}
