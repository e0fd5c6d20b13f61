"""The 95% interval of a ratio and the rule that stops `bench compare`'s rounds
(locktune/bench/interval.py), against figures worked by hand."""

from __future__ import annotations

import math

import pytest

from locktune.bench import interval


def test_t_quantiles_are_students():
    assert interval.t975(1) == 12.706
    assert interval.t975(4) == 2.776
    assert interval.t975(30) == 2.042
    assert 2.000 < interval.t975(45) < 2.042
    assert interval.t975(1000) == 1.96
    with pytest.raises(ValueError):
        interval.t975(0)


def test_interval_is_taken_on_log_ratios():
    # logs -0.1 and +0.1: mean 0, sd 0.1414, n 2: half-width 12.706 * 0.1414 / 1.414 = 1.2706
    iv = interval.ratio_interval([math.exp(-0.1), math.exp(0.1)])
    assert iv["n"] == 2 and iv["centre"] == pytest.approx(1.0)
    assert iv["lo"] == pytest.approx(math.exp(-1.2706), rel=1e-3)
    assert iv["hi"] == pytest.approx(math.exp(1.2706), rel=1e-3)
    # the larger side, in percent of the centre: exp(1.2706) - 1
    assert iv["half_width_pct"] == pytest.approx(100 * (math.exp(1.2706) - 1), rel=1e-3)


def test_a_steady_ratio_has_a_zero_width_and_its_geometric_mean():
    iv = interval.ratio_interval([1.5, 1.5, 1.5])
    assert iv["centre"] == pytest.approx(1.5) and iv["half_width_pct"] == pytest.approx(0)
    # the centre is the geometric mean, not the arithmetic one
    assert interval.ratio_interval([1.0, 4.0])["centre"] == pytest.approx(2.0)


def test_one_round_gives_no_interval_and_none_gives_nothing():
    assert interval.ratio_interval([1.2])["lo"] is None
    assert interval.ratio_interval([]) is None
    assert interval.ratio_interval([None, 0.0]) is None
    assert interval.text(interval.ratio_interval([1.2])) == "1.20x (1 round: no interval)"


def test_the_verdict_reads_the_interval_not_the_centre():
    assert interval.verdict(interval.ratio_interval([1.30, 1.32, 1.31])) == "faster"
    assert interval.verdict(interval.ratio_interval([0.70, 0.71, 0.72])) == "slower"
    assert interval.verdict(interval.ratio_interval([0.9, 1.3, 1.1])) == "no different"


def wide(pct):
    return {"variant": "mcs", "point": "8 threads", "half_width_pct": pct}


def test_rounds_go_on_until_narrow_then_stop():
    r = interval.Rounds(least=3, most=100, target_pct=5.0, cap_s=600)
    for n, width in [(1, 3.0), (2, 3.0)]:  # under `least`, narrow or not
        r.run = n
        assert not r.done(1.0, wide(width))
    r.run = 3
    assert not r.done(1.0, wide(12.0))
    r.run = 4
    assert r.done(1.0, wide(4.9)) and r.met()
    assert "within +-5% after 4 rounds" in r.stopped


def test_the_cap_stops_the_rounds_and_says_the_target_was_missed():
    r = interval.Rounds(least=3, target_pct=5.0, cap_s=60)
    r.run = 7
    assert r.done(61.0, wide(9.5))
    assert r.met() is False
    assert "time cap (60 s) after 7 rounds" in r.stopped
    assert "+-9.5% (mcs, 8 threads), target +-5% not met" in r.stopped
    assert r.doc()["target_met"] is False


def test_fixed_rounds_run_exactly_that_many():
    r = interval.Rounds.fixed(2)
    r.run = 1
    assert not r.done(0.0, None)
    r.run = 2
    assert r.done(0.0, wide(50.0)) and r.met() is None
