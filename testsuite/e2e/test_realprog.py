"""The real-program runner (scripts/realprog.py) owns the end-to-end steps once: every program,
memcached included, is a recipe of it (issue 15).  About a second: nothing is fetched or
built here (test_programs.py and test_memcached.py run the steps on the real programs).
"""

from __future__ import annotations

import ast
import json

from conftest import ROOT, script_module

RP = script_module("realprog.py", "realprog")


def test_memcached_is_a_recipe_of_the_runner():
    recipes = RP.every_recipe()
    assert set(RP.RECIPES) < set(recipes)
    mc = recipes["memcached"]
    assert isinstance(mc, RP.Recipe)
    assert mc.harness is not None and mc.profile is not None and mc.by_case
    assert "--disable-coverage" in mc.configure and "$LT_CFLAGS" in mc.configure


def _code_strings(path) -> set[str]:
    """The string constants of a script's code (its docstrings left out)."""
    tree = ast.parse(path.read_text())
    docs = {
        id(n.body[0].value)
        for n in ast.walk(tree)
        if isinstance(n, ast.Module | ast.FunctionDef | ast.ClassDef)
        and n.body
        and isinstance(n.body[0], ast.Expr)
        and isinstance(n.body[0].value, ast.Constant)
    }
    return {
        n.value
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs
    }


def test_the_steps_live_once_in_the_runner():
    """memcached's script runs none of the generic steps itself: no apt-get, no bear, no
    configure, no `locktune rewrite` or `locktune flags` of its own (its configure line is a
    recipe field, which the runner runs)."""
    script = ROOT / "scripts" / "memcached.py"
    strings = _code_strings(script)
    for word in ("apt-get", "bear", "./configure", "flags", "distclean"):
        assert word not in strings, f"scripts/memcached.py runs `{word}` itself"
    for node in ast.walk(ast.parse(script.read_text())):  # [locktune(), "rewrite", ...]
        if isinstance(node, ast.List) and any(isinstance(e, ast.Call) for e in node.elts):
            words = {e.value for e in node.elts if isinstance(e, ast.Constant)}
            assert "rewrite" not in words, f"scripts/memcached.py:{node.lineno} rewrites itself"
    runner = (ROOT / "scripts" / "realprog.py").read_text()
    assert "_memcached_module" not in runner


def _harness(passing, failing):
    def run(tree, env, log):
        log.write_text("the harness ran\n")
        return {
            "wall_s": 0.1,
            "exit": 1 if failing else 0,
            "status": "failed" if failing else "ok",
            "cases": len(passing) + len(failing),
            "passing_cases": passing,
            "failing_cases": failing,
            "details": {c: "(timed out)" for c in failing},
        }

    return run


def test_a_harness_run_is_judged_case_by_case_against_the_original(tmp_path):
    """A recipe's harness replaces its test line; a rewritten run passes when every case that
    passes on the original passes, a case that fails on the original too is not held
    against it, and a lost one is named with its detail."""
    (tmp_path / "original").mkdir()
    (tmp_path / "rewritten").mkdir()
    base_recipe = RP.Recipe(
        name="toy",
        package="toy",
        marker="toy.c",
        configure="true",
        build="true",
        test="false",  # never run: the harness runs the tests
        clean="true",
        covers=(),
        harness=_harness(["t/a.t", "t/b.t"], ["t/net.t"]),
    )
    base = RP.run_tests(base_recipe, tmp_path, "original", None)
    assert base["status"] == "failed" and base["tail"] == ["not ok: t/net.t (timed out)"]
    assert json.loads((tmp_path / "test-original.json").read_text())["passing_cases"] == [
        "t/a.t",
        "t/b.t",
    ]
    assert (tmp_path / "test-original.log").read_text() == "the harness ran\n"

    same = RP.Recipe(
        **{**base_recipe.__dict__, "harness": _harness(["t/a.t", "t/b.t"], ["t/net.t"])}
    )
    rec = RP.run_tests(same, tmp_path, "original", None, base)
    assert rec["status"] == "ok" and rec["regressions"] == []

    lost = RP.Recipe(**{**base_recipe.__dict__, "harness": _harness(["t/a.t"], ["t/b.t"])})
    rec = RP.run_tests(lost, tmp_path, "original", None, base)
    assert rec["status"] == "regressions" and rec["regressions"] == ["t/b.t"]
    assert rec["tail"] == ["passes on the original, not here: t/b.t (timed out)"]


PROBE_T = r"""
use strict;
use Test::More tests => 3;
use IO::Socket::INET;
ok(!IO::Socket::INET->new(PeerAddr => "127.0.0.1:$ENV{OUTSIDE_PORT}"),
   "a server listening outside the file's namespace does not answer");
open(my $f, "<", "/proc/sys/net/ipv4/ip_local_port_range") or die;
my ($lo, $hi) = split ' ', <$f>;
ok($lo >= 50000, "ephemeral ports $lo-$hi lie above the 30000-49999 the tests pick from");
my $t0 = time;
IO::Socket::INET->new(PeerAddr => "fooble:11211");
ok(time - $t0 <= 2, "an unresolvable name fails at once, no resolver waited on");
"""


def test_each_memcached_test_file_has_a_network_of_its_own(tmp_path):
    """memcached's test files poll a random port in 30000-49999 until their server answers; in
    CI a poll connected to itself (the port was in the ephemeral range), and files run at once
    share the loopback.  Each file runs in a network namespace of its own whose ephemeral
    ports lie above that range: a real `prove` run through the harness's own path shows it."""
    import os
    import socket

    MC = script_module("memcached.py", "memcached")
    assert MC.netns_unavailable() is None, MC.netns_unavailable()
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "probe.t").write_text(PROBE_T)
    with socket.socket() as outside:
        outside.bind(("127.0.0.1", 0))
        outside.listen()
        env = dict(os.environ, OUTSIDE_PORT=str(outside.getsockname()[1]))
        rec, out = MC._prove_one(tmp_path, "t/probe.t", env, 60)
    assert rec["status"] == "ok", out
    assert rec["tests"] == 3, out


def test_a_source_fix_applies_once_or_stops_the_build(tmp_path):
    """A recipe's source fixes (a bug of the program's own that makes its suite fail at random
    on the original too) are applied to the original's tree before it is built, so to both
    trees; a fix whose text is not there exactly once stops the build, naming the file."""
    fix = RP.SourceFix("a.c", "x += total;\n", "x += n;\n", "why")
    recipe = RP.every_recipe()["memcached"]
    recipe = type(recipe)(**{**recipe.__dict__, "source_fixes": (fix,)})
    (tmp_path / "a.c").write_text("int f(void) {\n    x += total;\n}\n")
    assert RP.apply_fixes(recipe, tmp_path) == [{"path": "a.c", "why": "why"}]
    assert "x += n;" in (tmp_path / "a.c").read_text()
    try:  # applied already: the text is gone
        RP.apply_fixes(recipe, tmp_path)
    except RP.Failed as e:
        assert "a.c" in str(e) and "found 0" in str(e)
    else:
        raise AssertionError("a fix whose text is missing was applied silently")
    # memcached's: debugtime's clock step (the text is checked against the real source by
    # test_memcached.py, whose build applies it)
    (mc_fix,) = RP.every_recipe()["memcached"].source_fixes
    assert mc_fix.path == "proto_text.c" and "current_time += time_delta" in mc_fix.new
