"""Each semantic patch in cocci/ on its own: testsuite/cocci/NAME/input.c through spatch,
run exactly as `locktune rewrite` runs it, must give testsuite/cocci/NAME/expected.c, and
what its Python rules log (the sites found, the wrapper candidates) must be
testsuite/cocci/NAME/expected-log.jsonl when that file exists."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
CASES = sorted(p.name for p in HERE.iterdir() if (p / "input.c").exists())


def apply(patch: Path, case_dir: Path, out: Path, log: Path | None = None) -> str:
    """The patched text of case_dir/input.c (input.c itself when nothing changes)."""
    from locktune.rewrite import cocci

    logs = {}
    if log is not None:
        log.write_text("")
        logs = {"LOCKTUNE_SITE_LOG": str(log), "LOCKTUNE_WRAPPER_LOG": str(log)}
    res = subprocess.run(
        cocci.spatch_command(patch, "input.c", str(out)),
        cwd=case_dir,
        env=cocci.spatch_env(patch.parent, **logs),
        capture_output=True,
        text=True,
        timeout=120,
    )
    if "no modified files" in res.stderr:
        return (case_dir / "input.c").read_text()
    assert res.returncode == 0, res.stderr
    return out.read_text()


def _records(path: Path) -> list[str]:
    """One canonical line per logged record, in a stable order."""
    lines = [ln for ln in path.read_text().splitlines() if ln.strip()]
    return sorted(json.dumps(json.loads(ln), sort_keys=True) for ln in lines)


@pytest.mark.parametrize("name", CASES)
def test_patch(name, native_dir, tmp_path):
    patch = native_dir / "share" / "locktune" / "cocci" / f"{name}.cocci"
    assert patch.exists(), f"{patch} is not installed"
    log = tmp_path / "log.jsonl"
    got = apply(patch, HERE / name, tmp_path / "output.c", log)
    assert got == (HERE / name / "expected.c").read_text()
    expected_log = HERE / name / "expected-log.jsonl"
    if expected_log.exists():
        assert _records(log) == _records(expected_log)


@pytest.mark.parametrize("name", CASES)
def test_patch_is_idempotent(name, native_dir, tmp_path):
    """A patch applied to its own output changes nothing (the rewriter's second run)."""
    patch = native_dir / "share" / "locktune" / "cocci" / f"{name}.cocci"
    case = tmp_path / "case"
    case.mkdir()
    (case / "input.c").write_text((HERE / name / "expected.c").read_text())
    assert apply(patch, case, tmp_path / "output.c") == (HERE / name / "expected.c").read_text()


def test_every_patch_has_a_case():
    patches = {p.stem for p in (HERE.parent.parent / "cocci").glob("*.cocci")}
    assert patches, "no semantic patches found"
    assert patches <= set(CASES), f"patches without a test case: {sorted(patches - set(CASES))}"
