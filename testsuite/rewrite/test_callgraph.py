"""The whole-program pass (locktune/rewrite/callgraph.py): facts closed over the call graph,
static names resolved within their file, the shortest chain given as the reason."""

from __future__ import annotations

from locktune.rewrite.callgraph import close


def fn(name, file, calls=(), on_caller="", wait="", static=False):
    return {
        "name": name,
        "file": file,
        "line": 1,
        "static": static,
        "on_caller": on_caller,
        "wait": wait,
        "calls": list(calls),
    }


def test_a_fact_reaches_every_caller_through_other_files():
    facts = close(
        [
            fn("store", "thread.c", ["do_store"]),
            fn("do_store", "memcached.c", ["alloc", "memcpy_like"]),
            fn("alloc", "items.c", ["pull_tail"]),
            fn("pull_tail", "items.c", on_caller="calls pthread_getspecific() (line 9)"),
            fn("memcpy_like", "util.c"),
            fn("unrelated", "util.c", ["memcpy_like"]),
        ]
    )
    bound = facts["on_caller"]
    assert set(bound) == {"store", "do_store", "alloc", "pull_tail"}
    assert bound["store"] == (
        "depends on its thread: store() -> do_store() -> alloc() -> pull_tail() "
        "(items.c: calls pthread_getspecific() (line 9))"
    )
    assert facts["wait"] == {}


def test_the_shortest_chain_is_the_reason_and_cycles_end():
    facts = close(
        [
            fn("a", "a.c", ["b", "c"]),
            fn("b", "b.c", ["a", "d"]),
            fn("c", "c.c", wait="waits on a condition variable (line 3)"),
            fn("d", "d.c", ["c"]),
        ]
    )
    assert facts["wait"]["a"].endswith("a() -> c() (c.c: waits on a condition variable (line 3))")
    assert facts["wait"]["b"] == (
        "may wait on a condition variable: b() -> a() -> c() "
        "(c.c: waits on a condition variable (line 3))"
    )
    assert set(facts["wait"]) == {"a", "b", "c", "d"}
    assert facts["on_caller"] == {}


def test_a_static_function_shadows_the_program_wide_one_in_its_file():
    facts = close(
        [
            fn("log", "journal.c", on_caller="uses the thread-local variable 'buf' (line 2)"),
            fn("log", "quiet.c", static=True),  # quiet.c's own log(): no thread state
            fn("uses_quiet", "quiet.c", ["log"]),
            fn("uses_journal", "main.c", ["log"]),
        ]
    )
    assert "uses_quiet" not in facts["on_caller"]
    assert facts["on_caller"]["uses_journal"].startswith("depends on its thread: uses_journal()")
