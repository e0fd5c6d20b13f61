"""scripts/rewrite_programs.py: the table of issue 11's item 8 is made from rewrite reports by
code (it was written by hand), and its one judgement, which sections have their lock and
unlock in one function, follows the reasons the extractor gives."""

from __future__ import annotations

from conftest import script_module

RP = script_module("rewrite_programs.py", "rewrite_programs")


def section(status: str, reason: str = "", kind: str = "section") -> dict:
    return {"file": "a.c", "line": 1, "status": status, "reason": reason, "kind": kind}


def test_a_program_row_from_its_report():
    report = {
        "summary": {"files": 3, "files_rewritten": 2, "files_failed": 0, "elapsed_s": 1.5},
        "lock_wrappers": {"w_lock": {}, "w_unlock": {}},
        "critical_sections": [
            section("extracted"),
            section("extracted"),
            section("extracted"),
            section(
                "kept", "no unlock of &m in f(): the critical section ends in another function"
            ),
            section("kept", "the function ends with pause() held"),
            section(
                "kept",
                "&m is released at line 4 and taken again at line 6: the region it "
                "then holds does not close a block",
            ),  # fmt: skip
            section(
                "kept",
                "the unlock at line 9 writes the lock as &a[k].m, not proven to be "
                "the lock &p->m taken here",
            ),  # fmt: skip
            section(
                "kept",
                "not analysed: the file is not in the compilation database",
                kind="not-built",
            ),  # fmt: skip
            section("kept", "", kind="wrapper"),
        ],
    }
    row = RP.entry("p 1.0", report)
    assert (row["sections"], row["extracted"], row["kept"]) == (7, 3, 4)
    # The two that end in another function are not "lock and unlock in one function"; the
    # lock written two ways is (its unlock is in the function).
    assert row["lock_and_unlock_in_one_function"] == 5
    assert row["of_those_extracted_percent"] == 60.0
    assert row["not_built_lock_calls"] == 1
    assert row["kept_by_reason"] == {
        "the section begins or ends in another function": 2,
        "unlock/relock that does not close a block": 1,
        "the unlock writes the lock another way (not proven the same)": 1,
    }
    doc = RP.collect([], {"machine": {"note": "n"}})
    assert doc["all_programs"] == {
        "lock_and_unlock_in_one_function": 0,
        "extracted": 0,
        "percent": 0.0,
    }


def test_an_unknown_reason_is_shown_not_hidden():
    assert RP.bucket("something new at line 12").startswith("other: something new at line N")
