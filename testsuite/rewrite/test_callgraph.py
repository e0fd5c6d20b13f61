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


def ptr(name, file, targets=(), unknown=""):
    return {"name": name, "file": file, "targets": list(targets), "unknown": unknown}


def test_a_pointer_is_followed_to_what_each_file_assigns_it():
    """memcached's `hash` is assigned one of two hash functions: following it, the sections
    that hash stay off the caller; a pointer one of whose targets depends on its thread, or
    that is assigned something other than a function, makes its callers depend on theirs."""
    functions = [
        fn("lookup", "items.c", ["*hash"]),
        fn("jenkins", "hash.c", static=True),
        fn("murmur", "murmur.c"),
        fn("jenkins", "other.c", on_caller="calls pthread_self() (line 3)"),  # another file's
        fn("who", "items.c", ["*get_id"]),
        fn("self_id", "ids.c", static=True, on_caller="calls pthread_self() (line 7)"),
        fn("hook", "items.c", ["*on_done"]),
        fn("never", "items.c", ["*unset"]),
    ]
    pointers = [
        ptr("hash", "hash.c", ["jenkins"]),  # hash.c's static jenkins, not other.c's
        ptr("hash", "murmur.c", ["murmur"]),
        ptr("get_id", "ids.c", ["self_id"]),
        ptr(
            "on_done",
            "server.c",
            ["jenkins"],
            unknown="is assigned something other than a function (server.c:9)",
        ),
    ]
    facts = close(functions, pointers)
    bound = facts["on_caller"]
    assert "lookup" not in bound and "*hash" not in bound
    assert bound["who"] == (
        "depends on its thread: who() -> (*get_id)() -> self_id() (ids.c: calls pthread_self() "
        "(line 7))"
    )
    assert bound["hook"].startswith("depends on its thread: hook() -> (*on_done)() (server.c:")
    assert facts["resolved"] == ["*get_id", "*hash", "*on_done"]  # not *unset: nobody assigns it
    assert "never" not in bound  # the extraction is what treats an unresolved pointer as unknown
