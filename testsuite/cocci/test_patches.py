"""Each semantic patch in cocci/ on its own: testsuite/cocci/NAME/input.c through spatch
must give testsuite/cocci/NAME/expected.c exactly."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
CASES = sorted(p.name for p in HERE.iterdir() if (p / "input.c").exists())


@pytest.mark.parametrize("name", CASES)
def test_patch(name, native_dir, tmp_path):
    patch = native_dir / "share" / "locktune" / "cocci" / f"{name}.cocci"
    assert patch.exists(), f"{patch} is not installed"
    out = tmp_path / "output.c"
    res = subprocess.run(
        [
            "spatch",
            "--very-quiet",
            "--sp-file",
            str(patch),
            str(HERE / name / "input.c"),
            "-o",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 0, res.stderr
    assert out.read_text() == (HERE / name / "expected.c").read_text()


def test_every_patch_has_a_case():
    patches = {p.stem for p in (HERE.parent.parent / "cocci").glob("*.cocci")}
    assert patches, "no semantic patches found"
    assert patches <= set(CASES), f"patches without a test case: {sorted(patches - set(CASES))}"
