"""The sweeps `locktune bench locks` runs: points (threads, lines, delay) and the locks beside
glibc at each point.

    uncontended     1 thread, empty section: each algorithm's lock+unlock cost vs glibc and vs a
                    bare ticket lock (issue 3), and vs its Concurrency Kit peer (issue 12)
    oversubscribed  4/8/16/32 threads on this machine's CPUs, 1 line, short delay (issue 3)
    lines           2 threads, 1/5/20 lines, short delay, one thread per CPU (issue 3); the CK
                    peers beside them (issue 12)
    delay           one thread per CPU, 1/5/20 lines, delay 10^2..2*10^6 cycles; the section's
                    sequential rate and the round trip in the same run (issue 4, the RCL paper)
    scaling         1..16 threads, then 32 and 64, 1 line, short delay (a 16-core machine)
"""

from __future__ import annotations

from dataclasses import dataclass, field

from locktune.bench.lockbench import BARE_TICKET, NO_LOCK, PEERS, SEQUENTIAL, Lock

SHORT_DELAY = 100  # cycles: the paper's "high contention"


@dataclass(frozen=True)
class Point:
    threads: int | None  # None: one per usable CPU (less the server's CPU for RCL)
    lines: int
    delay: int
    pin: str = "auto"


@dataclass
class Sweep:
    name: str
    title: str
    axis: str  # the point field that varies: threads, lines, delay, or "" (one point)
    points: list[Point]
    metric: str = "throughput"  # throughput: higher is better; cost: ns per op, lower is better
    extra: list[Lock] = field(default_factory=list)  # run beside glibc and the algorithms
    goal: str = ""
    log_ratio: bool = False  # ratios span orders of magnitude (spin locks collapse)

    def x(self, p: Point) -> int | str:
        return getattr(p, self.axis) if self.axis else "uncontended"


NAMES = ["uncontended", "oversubscribed", "lines", "delay", "scaling"]
DEFAULT = ["uncontended", "oversubscribed", "lines"]

DELAYS = [100, 300, 1_000, 3_000, 10_000, 30_000, 100_000, 300_000, 1_000_000, 2_000_000]
SCALING_THREADS = list(range(1, 17)) + [32, 64]


def build(
    names: list[str],
    quick: bool = False,
    threads: list[int] | None = None,
    lines: list[int] | None = None,
    delays: list[int] | None = None,
) -> list[Sweep]:
    """The sweeps named, in the order of NAMES.  `threads` replaces the thread counts of the
    sweeps along threads (oversubscribed, scaling), `lines` the line counts of lines and delay,
    `delays` the delays of delay."""
    out = []
    for name in NAMES:
        if name not in names:
            continue
        if name == "uncontended":
            out.append(
                Sweep(
                    name,
                    "Uncontended lock+unlock: cost relative to glibc (1 thread, empty section)",
                    "",
                    [Point(1, 0, 0, "rr")],
                    metric="cost",
                    extra=[BARE_TICKET, NO_LOCK, *PEERS.values()],
                    goal="no algorithm above 1.0x glibc; the plainest within 1.2x of a bare "
                    "ticket lock; mcs, clh, ticket within 10% of their CK peers",
                )
            )
        elif name == "oversubscribed":
            ts = threads or ([4] if quick else [4, 8, 16, 32])
            out.append(
                Sweep(
                    name,
                    "Oversubscribed: throughput relative to glibc (1 line, short delay)",
                    "threads",
                    [Point(t, 1, SHORT_DELAY, "none") for t in ts],
                    goal="best of mcscr/shfl-block >= 1.3x glibc at 16 threads; no blocking "
                    "algorithm below 0.8x",
                    log_ratio=True,
                )
            )
        elif name == "lines":
            ks = lines or ([1, 5] if quick else [1, 5, 20])
            out.append(
                Sweep(
                    name,
                    "Two threads, one per CPU: throughput relative to glibc by shared lines",
                    "lines",
                    [Point(2, k, SHORT_DELAY, "rr") for k in ks],
                    extra=list(PEERS.values()),
                    goal="ratios with the round-trip regime noted (near < 200 ns <= far); mcs, "
                    "clh, ticket within 10% of their CK peers",
                )
            )
        elif name == "delay":
            ks = lines or ([1] if quick else [1, 5, 20])
            ds = delays or ([100, 100_000] if quick else DELAYS)
            out.append(
                Sweep(
                    name,
                    "Delay between sections (RCL paper): throughput relative to glibc",
                    "delay",
                    [Point(None, k, d) for k in ks for d in ds],
                    extra=[SEQUENTIAL],
                    goal="RCL: cost per section <= 1.3x the round trip; saturated throughput "
                    "as a fraction of the sequential rate",
                    log_ratio=True,
                )
            )
        elif name == "scaling":
            ts = threads or ([1, 2, 4] if quick else SCALING_THREADS)
            out.append(
                Sweep(
                    name,
                    "Thread sweep: throughput relative to glibc (1 line, short delay)",
                    "threads",
                    [Point(t, 1, SHORT_DELAY) for t in ts],
                    goal="the issue-3 sweep on a 16-core machine",
                    log_ratio=True,
                )
            )
    return out
