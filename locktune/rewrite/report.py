"""The rewrite report (`--report FILE`, schema locktune-rewrite/1): built, written, read back
and summarised on the terminal here, and nowhere else."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from locktune import jsondoc
from locktune.errors import LocktuneError
from locktune.profiler import document
from locktune.rewrite import cocci, config_header

SCHEMA = "locktune-rewrite/1"
SUMMARY_REASONS = 8  # kept reasons shown on the terminal, most frequent first
SUMMARY_REJECTED = 4  # functions close to lock wrappers shown on the terminal
SUMMARY_HOT = 5  # profiled critical sections shown on the terminal, by time


def build(
    *, root, dest, opts, states, ext, table, wrappers_found, accessors, no_accessor, written,
    written_any, profile, elapsed, phases, wrapper_functions=None, wrappers_rejected=None,
):  # fmt: skip
    sections = []
    for sec in sorted(ext.sections, key=lambda s: (s.get("file", ""), s.get("line", 0))):
        entry = {
            "file": sec.get("file"),
            "line": sec.get("line"),
            "end_lines": sec.get("end_lines", []),
            "function": sec.get("function"),
            "lock": sec.get("lock"),
            "site": sec.get("site"),
            "status": sec.get("status"),
            "reason": sec.get("reason"),
            "inputs": sec.get("inputs", []),
            "outputs": sec.get("outputs", []),
        }
        for k in (
            "column",
            "kind",
            "lock_key",
            "candidate_sites",
            "by_pointer",
            "thread_identity",
            "extracted_function",
            "flags",
            "detail",
        ):
            if k in sec:
                entry[k] = sec[k]
        if sec.get("rotated"):  # its loop rotated (refactor/src/LoopRotation.h)
            entry["rotated"] = sec["rotated"]
        sections.append(entry)
    site_list = [
        {
            "id": s.id,
            "ident": s.ident,
            "file": s.file,
            "line": s.line,
            "name": s.name,
            "kind": s.kind,
            "algorithm": s.algorithm,
            "server": s.server,
            "sections": len(s.sections),
            "kept": sum(1 for x in s.sections if x.get("status") == "kept"),
            "profiled": s.profile is not None,
        }
        for s in table.ordered()
    ]
    matched = {s.key for s in table.sites.values()}
    matched |= {s.via for s in table.sites.values() if s.via is not None}
    hot = []  # the profiled sites' critical sections that carry the time (profile callsites)
    for s in table.ordered():
        if s.profile is None:
            continue
        for t in document.section_times(s.profile, s.sections):
            sec = t.pop("section")
            hot.append(
                {
                    "site": f"{s.file}:{s.line}",
                    **t,
                    "status": sec.get("status") if sec else None,
                    "reason": sec.get("reason") if sec else None,
                    "extracted_function": sec.get("extracted_function") if sec else None,
                    "label": config_header.section_label({**t, "section": sec}),
                }
            )
    hot.sort(key=lambda h: -h["cs_ns"])
    files = []
    for rel, st in sorted(states.items()):
        status = "failed" if st.error else ("rewritten" if rel in written else "unchanged")
        entry = {
            "file": rel,
            "status": status,
            "error": st.error,
            "retargeted_by": st.retargeted_by,
        }
        if st.by_token:
            entry["retargeted_by_token"] = rel in written
        if st.extract_error:
            entry["extract_error"] = st.extract_error
        files.append(entry)
    fallbacks = [f for st in states.values() for f in st.fallbacks]
    # A lock wrapper's own lock call and an unlock whose section began in a caller are listed
    # (kind "wrapper" / "unlock-only") but are not critical sections: they do not count.
    real = [s for s in sections if s.get("kind", "section") == "section"]
    not_built = [s for s in sections if s.get("kind") == "not-built"]
    kept = [s for s in real if s["status"] == "kept"]
    extracted = [s for s in real if s["status"] == "extracted"]
    return {
        "schema": SCHEMA,
        "source_root": str(root),
        "output": str(dest) if written_any else None,
        "in_place": opts.in_place,
        "header": config_header.NAME,
        "tools": {
            "extract": ext.mode,
            "extract_unavailable_reason": ext.reason,
            "spatch": cocci.spatch_version(),
        },
        "lock_wrappers": {
            **{
                n: {"role": w["role"], "origin": f"{w['file']}:{w['line']}", "kind": "macro"}
                for n, w in wrappers_found.items()
            },
            **{
                n: {
                    "role": w["role"],
                    "origin": f"{w['file']}:{w['line']}",
                    "kind": "function",
                    "lock": w["lock"],
                }
                for n, w in (wrapper_functions or {}).items()
            },
            **{
                n: {"role": spec, "origin": "--lock-wrapper"}
                for n, spec in opts.lock_wrappers.items()
            },
        },
        "lock_accessors": [
            {
                "name": a.name,
                "wrappers": sorted(a.wrappers),
                "definitions": [{"file": d.file, "lock": d.lock} for d in a.definitions],
            }
            for a in accessors
        ],
        "wrappers_without_accessor": no_accessor,
        "lock_wrappers_rejected": wrappers_rejected or {},
        "files": files,
        "critical_sections": sections,
        "sites": site_list,
        "token_fallbacks": fallbacks,
        "notes": sorted(
            (n for st in states.values() for n in st.notes), key=lambda n: (n["file"], n["line"])
        ),
        "hot_sections": hot,
        "profile_sites_not_found": [
            f"{f}:{ln}" for (f, ln) in sorted(profile) if (f, ln) not in matched
        ],
        "profile_sites_lost": lost_sites(profile, matched, states),
        "diagnostics": ext.diagnostics,
        "summary": {
            "files": len(states),
            "files_rewritten": len(written),
            "files_failed": sum(1 for st in states.values() if st.error),
            "files_not_extracted": sum(1 for st in states.values() if st.extract_error),
            "sections": len(real),
            "fragments": len(sections) - len(real) - len(not_built),
            "not_built": len(not_built),
            "not_built_files": sorted({s["file"] for s in not_built}),
            "extracted": len(extracted),
            "kept": len(kept),
            # extracted after their loop was rotated (refactor/src/LoopRotation.h)
            "rotated": sum(1 for x in extracted if x.get("rotated")),
            "kept_reasons": dict(Counter(s["reason"] or "?" for s in kept).most_common()),
            "sites": len(site_list),
            "token_fallbacks": len(fallbacks),
            "retargeted_by_token": sum(1 for st in states.values() if st.retargeted_by == "token"),
            "elapsed_s": round(elapsed, 3),
            "phases_s": {k: round(v, 3) for k, v in phases.items()},
        },
    }


def lost_sites(profile: dict, matched: set, analysed) -> list[dict]:
    """Profiled sites the rewrite should have matched and did not: in a file it analysed,
    with a recommendation other than posix (the header entry would have had another
    algorithm).  The profile and the sources disagree about where that lock comes to life
    (a stale profile, or a site the profiler placed elsewhere): an error, not a note."""
    lost = []
    for (f, ln), lock in sorted(profile.items()):
        algo = (lock.get("recommendation") or {}).get("algorithm")
        if (f, ln) in matched or f not in analysed or algo in (None, "posix"):
            continue
        lost.append({"site": f"{f}:{ln}", "algorithm": algo, "cs_percent": lock.get("cs_percent")})
    return lost


def write(rep: dict, path: Path | str) -> None:
    """Write atomically: a reader never sees half a report."""
    jsondoc.write(rep, path, indent=2)


def dumps(rep: dict) -> str:
    return json.dumps(rep, indent=2) + "\n"


def read(path: Path | str) -> dict:
    """A rewrite report, checked; a problem is one LocktuneError line naming the file."""
    rep = jsondoc.read(
        path,
        SCHEMA,
        "a locktune rewrite report",
        "write one with `locktune rewrite --report FILE`",
    )
    for key, kind in (("summary", dict), ("critical_sections", list), ("sites", list)):
        if not isinstance(rep.get(key), kind):
            raise LocktuneError(f"{path}: a rewrite report without its `{key}` {kind.__name__}")
    return rep


def summary_text(rep: dict, report_path: str | None) -> str:
    s = rep["summary"]
    failed = s["files_failed"]
    if rep["output"] is None:
        head = (
            f"locktune rewrite: nothing written: {failed} of {s['files']} files could not be "
            f"analysed ({s['elapsed_s']:.1f} s)"
        )
    else:
        where = "in place" if rep["in_place"] else f"into {rep['output']}"
        head = (
            f"locktune rewrite: {s['files_rewritten']} of {s['files']} files rewritten {where} "
            f"({s['elapsed_s']:.1f} s)"
        )
    lines = [head]
    if s["sections"]:
        pct = 100.0 * s["extracted"] / s["sections"]
        lines.append(
            f"  critical sections  {s['sections']} found, {s['extracted']} extracted "
            f"({pct:.0f}%), {s['kept']} kept as lock/unlock"
        )
        if s.get("rotated"):
            lines.append(
                f"    {s['rotated']} of them in loops rotated so that each turn's section closes "
                "a block (the lock released for an instant each turn)"
            )
        if s.get("fragments"):
            lines.append(
                f"    also {s['fragments']} lock calls of wrapper functions and unlocks of "
                "sections that begin in a caller (kept as calls, not counted)"
            )
        reasons = list(s["kept_reasons"].items())
        for reason, n in reasons[:SUMMARY_REASONS]:
            lines.append(f"    kept {n:>4}  {reason}")
        if len(reasons) > SUMMARY_REASONS:
            rest = sum(n for _r, n in reasons[SUMMARY_REASONS:])
            more = "the report lists them" if report_path else "--report FILE lists them"
            lines.append(
                f"    kept {rest:>4}  for {len(reasons) - SUMMARY_REASONS} other reasons ({more})"
            )
    elif failed:
        lines.append(
            f"  critical sections  none found in the files analysed; {failed} file(s) could "
            "not be analysed"
        )
    else:
        lines.append("  critical sections  none found")
    if s.get("not_built"):
        nb = s["not_built_files"]
        lines.append(
            f"    also {s['not_built']} lock calls in {len(nb)} file(s) the build does not "
            f"compile ({', '.join(nb[:3])}{', ...' if len(nb) > 3 else ''}): not analysed, "
            "retargeted"
        )
    if rep["tools"]["extract_unavailable_reason"]:
        lines.append(f"  note: {rep['tools']['extract_unavailable_reason']}")
    algos = Counter(x["algorithm"] for x in rep["sites"])
    algo_text = ", ".join(f"{n} {a}" for a, n in sorted(algos.items()))
    lines.append(
        f"  lock sites         {s['sites']} in {rep['header']}"
        + (f" ({algo_text})" if algos else "")
    )
    if rep["lock_wrappers"]:
        lines.append(f"  lock wrappers      {', '.join(sorted(rep['lock_wrappers']))}")
    rejected = sorted(rep.get("lock_wrappers_rejected", {}).items())
    for name, why in rejected[:SUMMARY_REJECTED]:
        lines.append(f"  not a wrapper      {name}: {why}")
    if len(rejected) > SUMMARY_REJECTED:
        more = "the report lists them" if report_path else "--report FILE lists them"
        lines.append(f"  not a wrapper      and {len(rejected) - SUMMARY_REJECTED} more ({more})")
    not_analysed = {f["file"] for f in rep["files"] if f["status"] == "failed"}
    by_token = [f for f in rep["token_fallbacks"] if f["file"] not in not_analysed]
    if by_token:
        files = sorted({f["file"] for f in by_token})
        lines.append(
            f"  by token           {len(by_token)} names Coccinelle could not parse "
            f"({', '.join(files[:4])}{', ...' if len(files) > 4 else ''})"
        )
    by_token = [f["file"] for f in rep["files"] if f.get("retargeted_by") == "token"]
    if by_token:
        lines.append(
            f"  token path         {len(by_token)} file(s) retargeted by token, not Coccinelle "
            f"({', '.join(by_token[:4])}{', ...' if len(by_token) > 4 else ''})"
        )
    for n in rep.get("notes", []):
        lines.append(f"  note: {n['file']}:{n['line']}: {n['message']}")
    hot = rep.get("hot_sections") or []
    for h in hot[:SUMMARY_HOT]:
        lines.append(
            f"  hot section        {h['label']}: {h['share_percent']:.1f}% of site "
            f"{h['site']}'s critical-section time ({h['cs_ns'] / 1e6:.2f} ms)"
        )
    if len(hot) > SUMMARY_HOT:
        more = "the report lists them" if report_path else "--report FILE lists them"
        lines.append(f"  hot section        and {len(hot) - SUMMARY_HOT} more ({more})")
    if rep["profile_sites_not_found"]:
        nf = rep["profile_sites_not_found"]
        lines.append(
            f"  profile            {len(nf)} profiled site(s) not found in the sources: "
            f"{', '.join(nf[:3])}{', ...' if len(nf) > 3 else ''}"
        )
    lost = rep.get("profile_sites_lost") or []
    if lost:
        lines.append(
            f"  profile lost       {len(lost)} hot profiled site(s) in the rewritten files "
            "match no lock there; their recommended algorithm is not in the header: "
            + ", ".join(f"{x['site']} ({x['algorithm']})" for x in lost[:3])
            + (", ..." if len(lost) > 3 else "")
        )
    for f in rep["files"]:
        if f["status"] == "failed":
            how = " (retargeted by token, sections kept)" if f.get("retargeted_by_token") else ""
            lines.append(f"  not analysed       {f['error']}{how}")
        elif f.get("extract_error"):
            lines.append(f"  not extracted      {f['extract_error']} (sections kept)")
    if report_path:
        lines.append(f"  report             {report_path}")
    return "\n".join(lines)
