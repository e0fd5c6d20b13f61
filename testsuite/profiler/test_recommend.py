"""The recommendation rules and the calibration's threshold derivation, on crafted figures
(pure functions: every rule of docs/profiler.md is exercised, and every answer is a runtime
registry name)."""

from __future__ import annotations

import pytest

from locktune.algorithms import names as algorithm_names
from locktune.profiler.analyze import scaled
from locktune.profiler.calibrate import derive
from locktune.profiler.raw import SLOT_FIELDS
from locktune.profiler.recommend import DEFAULTS, recommend


def site(**kw):
    base = {
        "kind": "mutex",
        "attributes": [],
        "cs_percent": 40.0,
        "contention_percent": 30.0,
        "wait_percent": 0.0,
        "threads": 8,
        "cond_waits": 0,
        "trylock_failures": 0,
        "misses_per_cs": None,
        "locality_estimate": {"extra_ns_per_cs": None},
    }
    base.update(kw)
    return base


BIG = {"usable_cpus": 16, "max_threads": 8}
SMALL = {"usable_cpus": 2, "max_threads": 2}
OVER = {"usable_cpus": 2, "max_threads": 8}

CASES = [
    ("rwlock kept", site(kind="rwlock"), BIG, "posix"),
    ("spinlock kept", site(kind="spinlock"), BIG, "posix"),
    ("process-shared", site(attributes=["process-shared"]), BIG, "posix"),
    ("robust", site(attributes=["robust"]), BIG, "posix"),
    ("cold", site(cs_percent=3.0), BIG, "posix"),
    ("hot but uncontended", site(contention_percent=1.0), BIG, "posix"),
    ("few waits, long ones", site(contention_percent=1.0, wait_percent=30.0), BIG, "shfl"),
    ("oversubscribed", site(contention_percent=20.0), OVER, "shfl-block"),
    ("oversubscribed process, 2 users", site(contention_percent=20.0, threads=2), OVER, "shfl"),
    ("oversubscribed, most wait", site(contention_percent=80.0), OVER, "shfl-block"),
    ("very hot, many CPUs", site(cs_percent=75.0), BIG, "rcl"),
    ("poor locality (counters)", site(misses_per_cs=12.0), BIG, "rcl"),
    (
        "poor locality (estimate)",
        site(locality_estimate={"extra_ns_per_cs": 900.0}),
        BIG,
        "rcl",
    ),
    ("very hot, 2 CPUs", site(cs_percent=75.0), SMALL, "ccsynch"),
    ("very hot, 2 CPUs, condvars", site(cs_percent=75.0, cond_waits=10), SMALL, "shfl"),
    ("contended, good locality", site(misses_per_cs=1.0), BIG, "shfl"),
]


@pytest.mark.parametrize("name,s,machine,expected", CASES, ids=[c[0] for c in CASES])
def test_rules(name, s, machine, expected):
    r = recommend(s, machine, DEFAULTS)
    assert r["algorithm"] == expected, r
    assert r["algorithm"] in algorithm_names() and r["reason"]


def test_a_recommendation_says_for_which_thread_counts_it_was_measured():
    """Issue 14: where the choice rests on the thread count, the reason says so and names
    `auto`; where the choice would collapse with more threads than CPUs, too."""
    over = recommend(site(contention_percent=20.0), OVER, DEFAULTS)
    assert over["measured_at"] == {"threads": 8, "cpus": 2}
    assert "measured with 8 threads on 2 CPUs" in over["reason"]
    assert "`auto` switches between the two" in over["reason"]
    spin = recommend(site(misses_per_cs=1.0, threads=4), BIG, DEFAULTS)
    assert spin["algorithm"] == "shfl" and spin["measured_at"] == {"threads": 4, "cpus": 16}
    assert "with more threads than CPUs shfl collapses; use `auto` then" in spin["reason"]
    cold = recommend(site(cs_percent=3.0, threads=1), BIG, DEFAULTS)
    assert cold["reason"].endswith("measured with 1 thread on 16 CPUs")


def test_a_cull_threshold_brings_the_malthusian_lock_back():
    t = dict(DEFAULTS, cull_contention_percent=50.0)
    assert recommend(site(contention_percent=80.0), OVER, t)["algorithm"] == "mcscr"
    assert recommend(site(contention_percent=20.0), OVER, t)["algorithm"] == "shfl-block"


def test_no_upper_threshold_means_no_rcl_for_heat_alone():
    t = dict(DEFAULTS, upper_cs_percent=None)
    assert recommend(site(cs_percent=95.0), BIG, t)["algorithm"] == "shfl"


def points(pairs, rcl=None):
    out = []
    for i, (delay, pct, wait) in enumerate(pairs):
        out.append(
            {
                "delay": delay,
                "cs_percent": pct,
                "wait_percent": wait,
                "contention_percent": 30.0 if wait > 10 else 1.0,
                "rcl_ratio": None if rcl is None else rcl[i],
            }
        )
    return out


def test_derive_lower_and_upper():
    sweep = points(
        [(100, 90.0, 95.0), (1000, 70.0, 80.0), (10000, 30.0, 55.0), (100000, 5.0, 2.0)],
        rcl=[1.8, 1.1, 0.7, 0.5],
    )
    d = derive(sweep, 200.0)
    v = d["values"]
    assert v["lower_cs_percent"] == 30.0  # waiting is 55% of the sections at delay 10000
    assert v["upper_cs_percent"] == 70.0  # RCL still wins at delay 1000
    assert v["locality_poor_ns"] == DEFAULTS["misses_poor"] * 100.0
    assert "10000" in d["why"]["lower_cs_percent"]


def test_derive_when_rcl_never_wins_nor_posix_collapses():
    sweep = points([(100, 40.0, 20.0), (100000, 5.0, 1.0)], rcl=[0.4, 0.3])
    sweep[1].update(wait_percent=80.0, contention_percent=0.5)  # preemption, not collapse
    d = derive(sweep, None)
    v = d["values"]
    assert v["upper_cs_percent"] is None
    assert v["lower_cs_percent"] == 40.0 and "never collapsed" in d["why"]["lower_cs_percent"]
    assert v["locality_poor_ns"] == DEFAULTS["locality_poor_ns"]


def slot(**kw):
    s = dict.fromkeys(SLOT_FIELDS[1:], 0)
    s.update(kw)
    return s


def test_untimed_sections_are_estimated_from_the_random_samples_only():
    # 1000 acquisitions: 256 always timed (slow, cold: 100 each), 44 random samples (10
    # each), 700 untimed: the estimate uses the random samples' mean, not the cold ones'.
    s = slot(
        acquisitions=1000,
        timed=300,
        hold=256 * 100 + 44 * 10,
        cs=256 * 110 + 44 * 12,
        timed_free=44,
        hold_free=44 * 10,
        cs_free=44 * 12,
    )
    out = scaled(s)
    assert out["hold"] == pytest.approx(256 * 100 + 44 * 10 + 700 * 10)
    assert out["cs"] == pytest.approx(256 * 110 + 44 * 12 + 700 * 12)
    assert out["acquisitions"] == 1000  # counts are never scaled


def test_nothing_is_estimated_when_everything_was_timed():
    s = slot(acquisitions=10, timed=10, hold=100, cs=150)
    assert (scaled(s)["hold"], scaled(s)["cs"]) == (100, 150)


def test_the_two_contention_measures_are_named_apart():
    """Issue 13: one terminal line said "0.4% of acquisitions contended" and the reason
    "contention 78.9%" for the same lock.  The reason names which measure it quotes."""
    waits = recommend(site(contention_percent=0.4, wait_percent=78.9), OVER, DEFAULTS)
    assert "78.9% of its critical-section time waiting" in waits["reason"], waits
    assert "contention 78.9%" not in waits["reason"]
    acq = recommend(site(contention_percent=30.0, wait_percent=2.0), OVER, DEFAULTS)
    assert "30.0% of acquisitions contended" in acq["reason"], acq
