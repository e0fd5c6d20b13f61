"""Lock sites: where locks come to life, numbered for locktune_config.h.

A site is file:line of the original source, relative to the source root (DESIGN.md, "Lock
identity").  The semantic patches log each site they give an identifier to; extraction's
report adds the lock_key that joins a critical section's lock to its site.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from locktune.rewrite import clex

_IDENT = re.compile(r"\bLT_SITE_([A-Z0-9_]+)_(\d+)\b")


def mangle(rel: str) -> str:
    return re.sub(r"[^A-Za-z0-9]", "_", rel).upper()


def ident(rel: str, line: int) -> str:
    """The enum name of a site: thread.c:45 -> LT_SITE_THREAD_C_45 (as locktune_sites.py)."""
    return f"LT_SITE_{mangle(rel)}_{line}"


@dataclass
class Site:
    file: str
    line: int
    kind: str = "init"  # init | static | array
    names: list[str] = field(default_factory=list)
    functions: list[str] = field(default_factory=list)
    lock_keys: list[str] = field(default_factory=list)
    id: int = 0
    algorithm: str = "posix"
    server: int = -1
    comment: str | None = None  # kept verbatim from a previous header
    sections_text: str | None = None  # the previous header's sentences about the sections
    sections: list[dict] = field(default_factory=list)
    profile: dict | None = None
    via: tuple[str, int] | None = None  # the init wrapper's own site (initwrappers.py)

    @property
    def ident(self) -> str:
        return ident(self.file, self.line)

    @property
    def key(self) -> tuple[str, int]:
        return (self.file, self.line)

    @property
    def name(self) -> str:
        return ", ".join(self.names) if self.names else "?"


class SiteTable:
    def __init__(self) -> None:
        self.sites: dict[tuple[str, int], Site] = {}
        self._by_ident: dict[str, Site] = {}  # kept as sites are added: asked once per site

    def add(self, record: dict) -> Site:
        key = (record["file"], int(record["line"]))
        site = self.sites.get(key)
        if site is None:
            site = self.sites[key] = Site(key[0], key[1], kind=record.get("kind", "init"))
            self._by_ident[site.ident] = site
        elif record.get("kind") == "array":
            site.kind = "array"
        if record.get("via"):
            f, _, ln = record["via"].rpartition(":")
            site.via = (f, int(ln))
        name = record.get("name")
        if name and name != "?" and name not in site.names:
            site.names.append(name)
        fn = record.get("function")
        if fn and record.get("kind") == "init" and fn not in site.functions:
            site.functions.append(fn)
        return site

    def by_ident(self) -> dict[str, Site]:
        return self._by_ident

    def ordered(self) -> list[Site]:
        return sorted(self.sites.values(), key=lambda s: s.id)

    def number(self, previous: dict[str, dict]) -> None:
        """Ids: a site the previous header numbered keeps its id; new ones follow, in
        file:line order."""
        used = set()
        for s in self.sites.values():
            p = previous.get(s.ident)
            if p and p["id"] not in used:
                s.id = p["id"]
                used.add(p["id"])
        nxt = max(used, default=0) + 1
        for s in sorted(self.sites.values(), key=lambda s: (s.file, s.line)):
            if not s.id:
                s.id = nxt
                nxt += 1

    def check_unique_idents(self) -> list[str]:
        """Two sites whose identifiers collide (a-b.c:3 and a_b.c:3): error messages."""
        seen: dict[str, Site] = {}
        errors = []
        for s in sorted(self.sites.values(), key=lambda s: s.key):
            other = seen.setdefault(s.ident, s)
            if other is not s:
                errors.append(
                    f"{s.file}:{s.line}: its site name {s.ident} is also that of "
                    f"{other.file}:{other.line}; rename one of the files"
                )
        return errors


def idents_in(text: str) -> set[str]:
    """The site identifiers the code names (not its comments or strings)."""
    if "LT_SITE_" not in text:
        return set()
    return {t.text for t in clex.tokens(text) if t.kind == "ident" and _IDENT.fullmatch(t.text)}


def decode(ident_text: str, files: list[str]) -> tuple[str, int] | None:
    """file:line of a site identifier, given the files it may name."""
    m = _IDENT.fullmatch(ident_text)
    if not m:
        return None
    for rel in files:
        if mangle(rel) == m.group(1):
            return rel, int(m.group(2))
    return None


def normalize_lock(expr: str | None) -> str:
    e = "".join((expr or "").split())
    while e.startswith("&"):
        e = e[1:]
        while e.startswith("(") and e.endswith(")"):
            e = e[1:-1]
    return e


def _last_component(name: str) -> str:
    return re.split(r"->|\.", re.sub(r"\[[^\]]*\]", "", name))[-1]


def match_section(section: dict, table: SiteTable, key_index: dict[str, list[Site]]) -> list[Site]:
    """The sites a critical section's lock may come from.

    With extraction's lock_key: the sites with that key.  Without it (a listing only): the
    sites whose lock is written the same way, else whose last field or variable name is the
    same (arrays: without the index), in the section's own file first; a guess that leaves
    two candidates is no answer."""
    key = section.get("lock_key")
    if key and key != "unknown" and key in key_index:
        return key_index[key]
    lock = normalize_lock(section.get("lock"))
    if not lock:
        return []
    last = _last_component(lock)
    here = [s for s in table.sites.values() if s.file == section.get("file")]
    for pool in (here, list(table.sites.values())):
        same = [s for s in pool if lock in s.names]
        if len(same) == 1:
            return same
        cands = [s for s in pool if any(_last_component(n) == last for n in s.names)]
        if len(cands) == 1:
            return cands
        if same or cands:
            return []
    return []
