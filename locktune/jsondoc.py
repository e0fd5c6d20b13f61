"""What every JSON document of locktune shares, for the module that owns each one
(`locktune/profiler/document.py`: profile.json; `locktune/rewrite/report.py`: the rewrite
report): an atomic write, and a read that checks the schema name and turns every problem
into one LocktuneError line naming the file (and the line of a JSON syntax error)."""

from __future__ import annotations

import json
from pathlib import Path

from locktune.errors import LocktuneError


def write(doc: dict, path: Path | str, indent: int = 1) -> None:
    """Write atomically: a reader never sees half a document."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(doc, indent=indent) + "\n")
    tmp.replace(path)


def read(path: Path | str, schema: str, what: str, how: str) -> dict:
    """The JSON object in `path` whose "schema" is `schema`; `what` names the kind of document
    in the error ("a locktune profile"), `how` says how to make one."""
    try:
        text = Path(path).read_text()
    except OSError as e:
        raise LocktuneError(f"{path}: {e.strerror}") from e
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise LocktuneError(f"{path}:{e.lineno}: not JSON: {e.msg}") from e
    if not isinstance(doc, dict) or doc.get("schema") != schema:
        found = doc.get("schema") if isinstance(doc, dict) else type(doc).__name__
        raise LocktuneError(f"{path}: not {what} (schema {found!r}, expected {schema}); {how}")
    return doc
