"""How sure a ratio is: the 95% confidence interval of a ratio measured once per round, and
when to stop adding rounds.

A ratio (a variant's throughput over the original's, both measured in the same round) is a
product of noise, not a sum: the interval is taken on log(ratio), a Student t interval of
the mean, and mapped back.  Its centre is the geometric mean of the rounds' ratios; its
half-width is quoted in percent of the centre (the larger side: exp is not symmetric).

    ratios 1.21 1.30 1.26 1.33 1.24  ->  1.27x, 95% 1.21-1.32 (+-4.6%)

Rounds (`Rounds`): `bench compare` runs at least `least` rounds, then one more at a time
until every compared ratio's half-width is at most `target_pct`, or `most` rounds, or
`cap_s` seconds have passed; `stopped` says which (the results document and the terminal
carry it).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

LEVEL = 0.95
TARGET_PCT = 5.0  # issue 14: each ratio's 95% interval within +-5%

# Student t, two-sided 95% (0.975 quantile), by degrees of freedom; 1.96 beyond the table.
_T975 = [
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
]  # fmt: skip


def t975(df: int) -> float:
    """The 0.975 quantile of Student's t with df degrees of freedom (df >= 1)."""
    if df < 1:
        raise ValueError("t975 needs at least one degree of freedom")
    if df <= len(_T975):
        return _T975[df - 1]
    if df <= 60:
        return 2.000 + (2.042 - 2.000) * (60 - df) / 30  # 2.042 at 30, 2.000 at 60
    if df <= 120:
        return 1.980 + (2.000 - 1.980) * (120 - df) / 60
    return 1.960


def ratio_interval(ratios: list[float | None]) -> dict | None:
    """{"n", "centre", "lo", "hi", "half_width_pct"} of the rounds' ratios; lo, hi and
    half_width_pct are None with a single round (no interval).  None without a ratio."""
    logs = [math.log(r) for r in ratios if r is not None and r > 0]
    n = len(logs)
    if n == 0:
        return None
    mean = statistics.fmean(logs)
    centre = math.exp(mean)
    if n == 1:
        return {"n": 1, "centre": centre, "lo": None, "hi": None, "half_width_pct": None}
    half = t975(n - 1) * statistics.stdev(logs) / math.sqrt(n)
    lo, hi = math.exp(mean - half), math.exp(mean + half)
    return {
        "n": n,
        "centre": centre,
        "lo": lo,
        "hi": hi,
        "half_width_pct": 100.0 * max(hi / centre - 1.0, 1.0 - lo / centre),
    }


def text(iv: dict | None) -> str:
    """`1.27x (95% 1.21-1.32, +-4.6%, 5 rounds)`, or what there is."""
    if iv is None:
        return "no ratio"
    if iv["lo"] is None:
        return f"{iv['centre']:.2f}x (1 round: no interval)"
    return (
        f"{iv['centre']:.2f}x (95% {iv['lo']:.2f}-{iv['hi']:.2f}, "
        f"+-{iv['half_width_pct']:.1f}%, {iv['n']} rounds)"
    )


def verdict(iv: dict | None) -> str:
    """Faster, slower or indistinguishable from the original, by the interval."""
    if iv is None or iv["lo"] is None:
        return "unknown"
    if iv["lo"] > 1.0:
        return "faster"
    if iv["hi"] < 1.0:
        return "slower"
    return "no different"


@dataclass
class Rounds:
    """When `bench compare` stops adding rounds (module docstring)."""

    least: int = 3
    most: int = 100
    target_pct: float | None = TARGET_PCT  # None: exactly `least` rounds (--repeats)
    cap_s: float = 600.0
    run: int = 0  # rounds run so far
    stopped: str = ""  # why the last round was the last
    widest: dict | None = None  # {"variant", "point", "half_width_pct"} at the stop

    @classmethod
    def fixed(cls, n: int) -> Rounds:
        return cls(least=n, most=n, target_pct=None)

    def done(self, elapsed_s: float, widest: dict | None) -> bool:
        """After round self.run: is it the last?  Sets stopped and widest."""
        self.widest = widest
        width = None if widest is None else widest["half_width_pct"]
        if self.run < self.least:
            return False
        if self.target_pct is None:
            self.stopped = f"the {self.run} rounds asked for"
            return True
        if widest is None:
            self.stopped = f"{self.run} rounds: no ratio could be computed (every run failed)"
            return True
        if width <= self.target_pct:
            self.stopped = (
                f"every ratio's 95% interval within +-{self.target_pct:g}% after {self.run} rounds"
            )
            return True
        if self.run >= self.most:
            self.stopped = f"{self.most} rounds, the most allowed: {self._wider()}"
            return True
        if elapsed_s >= self.cap_s:
            self.stopped = (
                f"the time cap ({self.cap_s:.0f} s) after {self.run} rounds: {self._wider()}"
            )
            return True
        return False

    def _wider(self) -> str:
        w = self.widest
        if w is None:
            return "no interval could be computed"
        return (
            f"widest interval +-{w['half_width_pct']:.1f}% ({w['variant']}, {w['point']}), "
            f"target +-{self.target_pct:g}% not met"
        )

    def met(self) -> bool | None:
        """Did every interval reach the target?  None when no target was set."""
        if self.target_pct is None:
            return None
        w = self.widest
        return w is not None and w["half_width_pct"] <= self.target_pct

    def doc(self) -> dict:
        return {
            "least": self.least,
            "most": self.most,
            "target_pct": self.target_pct,
            "cap_s": self.cap_s,
            "run": self.run,
            "stopped": self.stopped,
            "widest": self.widest,
            "target_met": self.met(),
        }
