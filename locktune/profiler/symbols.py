"""Addresses to source: code addresses through ``addr2line -i`` (inline chains included, so a
lock initialised inside an inlined function at -O2 lands on the right line), static variables
through the DWARF information (pyelftools), symbol+offset from the ELF symbol table when a
module has no debug information, and ``module+offset (no debug information)`` when no
*defined* symbol holds the address (an undefined import, such as a stripped program's
``malloc`` with the address of its PLT entry, is never a candidate).

The debug information is the module's own, or a separate debug file (a distribution's debug
package, ``objcopy --only-keep-debug``): found by the module's build id
(``ROOT/.build-id/xx/rest.debug``) or its ``.gnu_debuglink`` (next to the module, in its
``.debug/`` folder, or ``ROOT/<the module's folder>/``; its CRC checked), for each ROOT of
``$LOCKTUNE_DEBUG_DIRS`` (folders separated by ``:``) and then ``/usr/lib/debug``.

One :class:`Module` per ELF file; everything is computed lazily and cached.
"""

from __future__ import annotations

import bisect
import os
import re
import shutil
import subprocess
import zlib
from dataclasses import dataclass
from functools import cached_property

from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile

from locktune.errors import LocktuneError

_DW_OP_ADDR = 0x03
_DW_OP_ADDRX = (0xA1, 0xFB)  # DW_OP_addrx (DWARF 5), DW_OP_GNU_addr_index
_ADDR_LINE = re.compile(r"^0x[0-9a-fA-F]+$")
# objdump -d --no-show-raw-insn: "  12bd:\tjmp    1070 <pthread_mutex_init@plt>", or an
# indirect one through the GOT: "call   *0x2fe2(%rip)        # 3fd8 <pthread_mutex_init@GLIBC..>"
_INSN = re.compile(r"^\s*([0-9a-f]+):\s+(\S+)\s*(.*)$")
_TARGET = re.compile(r"([0-9a-f]+) <([^>]+)>\s*$")
_INIT = re.compile(r"^pthread_(mutex|rwlock|spin)_init(@.*)?$")
_TAIL_DEPTH = 4  # functions a chain of tail calls may pass through
DEBUG_DIRS_ENV = "LOCKTUNE_DEBUG_DIRS"
SYSTEM_DEBUG_DIR = "/usr/lib/debug"
NO_DEBUG_INFO = "no debug information"


def debug_roots() -> list[str]:
    """The folders searched for separate debug files: $LOCKTUNE_DEBUG_DIRS, then the
    system's."""
    roots = [d for d in os.environ.get(DEBUG_DIRS_ENV, "").split(os.pathsep) if d]
    return [*roots, SYSTEM_DEBUG_DIR]


def _has_dwarf(path: str) -> bool:
    try:
        with open(path, "rb") as f:
            return ELFFile(f).get_section_by_name(".debug_info") is not None
    except (OSError, ELFError):
        return False


def _build_id(elf: ELFFile) -> str | None:
    for sec in elf.iter_sections():
        if sec["sh_type"] != "SHT_NOTE":
            continue
        for note in sec.iter_notes():
            if note["n_type"] == "NT_GNU_BUILD_ID" and note["n_name"] == "GNU":
                return note["n_desc"]
    return None


def _crc32(path: str) -> int | None:
    try:
        crc = 0
        with open(path, "rb") as f:
            while chunk := f.read(1 << 20):
                crc = zlib.crc32(chunk, crc)
        return crc
    except OSError:
        return None


@dataclass(frozen=True)
class Location:
    """One logical frame: a function and the file:line in it (None when unknown)."""

    function: str | None
    file: str | None
    line: int | None


@dataclass(frozen=True)
class Variable:
    name: str
    file: str | None
    line: int | None
    start: int
    is_array: bool
    type_offset: int | None  # DIE offset of its type, for member names


class Module:
    """An ELF file the profiled process had mapped."""

    def __init__(self, path: str):
        self.path = path
        self.exists = os.path.isfile(path)

    # ------------------------------------------------------------------ ELF basics
    def _open(self):
        return open(self.path, "rb")

    @cached_property
    def build_id(self) -> str | None:
        """The module's GNU build id (hex), from its .note.gnu.build-id."""
        if not self.exists:
            return None
        try:
            with self._open() as f:
                return _build_id(ELFFile(f))
        except (OSError, ELFError):
            return None

    @cached_property
    def debug_file(self) -> str | None:
        """The separate debug file of a module without DWARF of its own (module docstring),
        or None."""
        if not self.exists or _has_dwarf(self.path):
            return None
        roots = debug_roots()
        bid = self.build_id
        if bid and len(bid) > 2:
            for root in roots:
                cand = os.path.join(root, ".build-id", bid[:2], bid[2:] + ".debug")
                if os.path.isfile(cand) and _has_dwarf(cand):
                    return cand
        link = self._debuglink()
        if link is None:
            return None
        name, crc = link
        folder = os.path.dirname(os.path.realpath(self.path))
        cands = [os.path.join(folder, name), os.path.join(folder, ".debug", name)]
        cands += [os.path.join(root, folder.lstrip("/"), name) for root in roots]
        for cand in cands:
            if os.path.realpath(cand) == os.path.realpath(self.path) or not os.path.isfile(cand):
                continue
            if _crc32(cand) == crc and _has_dwarf(cand):
                return cand
        return None

    def _debuglink(self) -> tuple[str, int] | None:
        try:
            with self._open() as f:
                sec = ELFFile(f).get_section_by_name(".gnu_debuglink")
                data = sec.data() if sec is not None else None
        except (OSError, ELFError):
            return None
        if not data or b"\0" not in data:
            return None
        name = data.split(b"\0", 1)[0].decode("utf-8", "replace")
        at = (len(name) + 4) & ~3  # the name, its NUL, padded to 4; then the CRC
        if not name or "/" in name or len(data) < at + 4:
            return None
        return name, int.from_bytes(data[at : at + 4], "little")

    @cached_property
    def dwarf_path(self) -> str | None:
        """The file holding the module's DWARF: the module itself or its debug file."""
        if not self.exists:
            return None
        if _has_dwarf(self.path):
            return self.path
        return self.debug_file

    def anonymous(self, vaddr: int) -> str:
        """The honest name of an address no symbol holds: module+offset."""
        return f"{os.path.basename(self.path)}+{vaddr:#x} ({NO_DEBUG_INFO})"

    @cached_property
    def _symbols(self) -> dict[str, tuple[list[int], list[tuple[int, int, str, int]]]]:
        """Sorted (start, size, name, end of its section) per kind ('func', 'object') of the
        *defined* symbols: the module's .symtab, else its debug file's, else its .dynsym.
        An undefined symbol (an import: its value, when not 0, is its PLT entry's address
        in a program that takes the function's address) names nothing in this module."""
        out: dict[str, list[tuple[int, int, str, int]]] = {"func": [], "object": []}
        sources = [(self.path, ".symtab")]
        if self.debug_file:
            sources.append((self.debug_file, ".symtab"))
        sources.append((self.path, ".dynsym"))
        for path, secname in sources if self.exists else []:
            try:
                with open(path, "rb") as f:
                    elf = ELFFile(f)
                    sec = elf.get_section_by_name(secname)
                    if sec is None:
                        continue
                    for sym in sec.iter_symbols():
                        kind = {"STT_FUNC": "func", "STT_OBJECT": "object"}.get(
                            sym["st_info"]["type"]
                        )
                        shndx = sym["st_shndx"]
                        if not kind or not sym["st_value"] or not sym.name:
                            continue
                        if not isinstance(shndx, int):  # SHN_UNDEF, SHN_ABS, SHN_COMMON
                            continue
                        home = elf.get_section(shndx)
                        end = home["sh_addr"] + home["sh_size"]
                        out[kind].append((sym["st_value"], sym["st_size"], sym.name, end))
            except (OSError, ELFError):
                continue
            if out["func"] or out["object"]:
                break
        result = {}
        for kind, syms in out.items():
            syms.sort()
            result[kind] = ([s[0] for s in syms], syms)
        return result

    def _holder(self, vaddr: int, kind: str) -> tuple[int, int, str] | None:
        """(start, end, name) of the defined symbol holding vaddr: a sized symbol up to its
        size, an unsized one up to the next symbol or its section's end."""
        starts, syms = self._symbols[kind]
        i = bisect.bisect_right(starts, vaddr) - 1
        if i < 0:
            return None
        start, size, name, section_end = syms[i]
        if size:
            end = start + size
        else:
            end = min(starts[i + 1] if i + 1 < len(starts) else section_end, section_end)
        return (start, end, name) if start <= vaddr < end else None

    def symbol_at(self, vaddr: int, kind: str = "func") -> tuple[str, int] | None:
        """(name, offset) of the defined symbol holding vaddr."""
        held = self._holder(vaddr, kind)
        return (held[2], vaddr - held[0]) if held else None

    def func_range(self, vaddr: int) -> tuple[int, int] | None:
        """[start, end) of the function holding vaddr (to the next symbol when unsized)."""
        held = self._holder(vaddr, "func")
        return (held[0], held[1]) if held else None

    # ------------------------------------------------------------------ tail calls
    def _disassemble(self, start: int, end: int) -> list[tuple[int, str, int | None, str | None]]:
        """(address, mnemonic, target address, target symbol) of [start, end), by objdump."""
        cache = self.__dict__.setdefault("_disasm", {})
        if (start, end) in cache:
            return cache[(start, end)]
        tool = shutil.which("objdump")
        out: list[tuple[int, str, int | None, str | None]] = []
        if tool and self.exists:
            proc = subprocess.run(
                [
                    tool,
                    "-d",
                    "--no-show-raw-insn",
                    "-w",
                    f"--start-address={start:#x}",
                    f"--stop-address={end:#x}",
                    self.path,
                ],
                capture_output=True,
                text=True,
                timeout=120,
            )
            for line in proc.stdout.splitlines():
                m = _INSN.match(line)
                if not m:
                    continue
                t = _TARGET.search(m.group(3))
                target = int(t.group(1), 16) if t else None
                name = t.group(2) if t else None
                if target is not None and re.search(r"[+-]0x", name or "+0x"):
                    # objdump's name is an offset from the nearest symbol it knows (a
                    # stripped module's PLT entries): a function of the debug file's
                    # symbol table is the real target
                    sym = self.symbol_at(target)
                    if sym is not None and sym[1] == 0:
                        name = sym[0]
                out.append((int(m.group(1), 16), m.group(2), target, name))
        cache[(start, end)] = out
        return out

    def tail_calls(self, ret: int) -> tuple[list[int], str | None]:
        """A lock init reached through tail calls: `ret` is the init's return address, and
        the call just before it calls some function f, not the init; f (or a function f
        tail-calls, and so on) ends with `jmp pthread_*_init`.  Returns the jumps, innermost
        first (the init call's own line first), and None; or [] and why not, when the
        jumps cannot be told apart; or [] and None when the init was called directly."""
        fr = self.func_range(ret - 1)
        if fr is None:
            return [], None
        before = [i for i in self._disassemble(*fr) if i[0] < ret]
        if not before or not before[-1][1].startswith("call"):
            return [], None
        _, _, target, name = before[-1]
        if target is None or name is None or _INIT.match(name) or "+" in name:
            return [], None
        paths = self._tail_paths(target, _TAIL_DEPTH)
        if len(paths) == 1:
            return paths[0], None
        if not paths:
            return [], None
        return [], (
            f"{name} reaches the init through {len(paths)} tail calls; the profile cannot "
            "tell which one ran"
        )

    def _tail_paths(self, func: int, depth: int) -> list[list[int]]:
        fr = self.func_range(func)
        if fr is None or fr[0] != func or depth == 0:
            return []
        paths = []
        for addr, mnem, target, name in self._disassemble(*fr):
            if not mnem.startswith("j") or name is None:
                continue
            if _INIT.match(name):
                paths.append([addr])
            elif "+" not in name and target is not None and target != func:
                paths += [[*p, addr] for p in self._tail_paths(target, depth - 1)]
        return paths

    @cached_property
    def has_debug_info(self) -> bool:
        """DWARF of its own or in a separate debug file."""
        return self.dwarf_path is not None

    # ------------------------------------------------------------------ code
    def code(self, vaddrs: list[int]) -> dict[int, list[Location]]:
        """Inline chain (innermost first) of every address, through one addr2line run."""
        result: dict[int, list[Location]] = {}
        wanted = sorted(set(vaddrs))
        if not wanted:
            return result
        if self.dwarf_path:
            result.update(_addr2line(self.dwarf_path, wanted))
        for a in wanted:
            chain = result.get(a)
            if not chain or chain[0].file is None:
                sym = self.symbol_at(a)
                fn = f"{sym[0]}+{sym[1]:#x}" if sym else None
                result[a] = [Location(fn, None, None)]
        return result

    # ------------------------------------------------------------------ data
    @cached_property
    def _variables(self) -> tuple[list[int], list[Variable]]:
        vs: dict[int, Variable] = {}
        if self.dwarf_path:
            try:
                with open(self.dwarf_path, "rb") as f:
                    vs = _dwarf_variables(ELFFile(f))
            except (OSError, ELFError, ValueError, KeyError, IndexError):
                vs = {}
        ordered = sorted(vs.values(), key=lambda v: v.start)
        return [v.start for v in ordered], ordered

    def variable_at(self, vaddr: int) -> tuple[Variable | None, str | None]:
        """The static variable holding vaddr (from its symbol), and a detail such as
        ``[]`` for an array or ``.member`` for a struct member; (None, name) without DWARF."""
        sym = self.symbol_at(vaddr, "object")
        if sym is None:
            return None, None
        name, offset = sym
        start = vaddr - offset
        starts, vs = self._variables
        i = bisect.bisect_left(starts, start)
        var = vs[i] if i < len(vs) and starts[i] == start else None
        if var is None:
            return None, name
        detail = "[]" if var.is_array else self._member(var, offset)
        return var, detail

    def _member(self, var: Variable, offset: int) -> str | None:
        if var.type_offset is None or offset == 0:
            return None
        if self.dwarf_path is None:
            return None
        try:
            with open(self.dwarf_path, "rb") as f:
                dwarf = ELFFile(f).get_dwarf_info()
                die = dwarf.get_DIE_from_refaddr(var.type_offset)
                path = []
                while die is not None and offset >= 0:
                    die = _strip_type(die)
                    if die is None or die.tag not in ("DW_TAG_structure_type", "DW_TAG_union_type"):
                        break
                    found = None
                    for m in die.iter_children():
                        loc = m.attributes.get("DW_AT_data_member_location")
                        if (
                            m.tag != "DW_TAG_member"
                            or loc is None
                            or not isinstance(loc.value, int)
                        ):
                            continue
                        if loc.value <= offset:
                            found = (m, loc.value)
                    if not found:
                        break
                    m, at = found
                    path.append("." + _name(m))
                    offset -= at
                    die = m.get_DIE_from_attribute("DW_AT_type")
                    if offset == 0:
                        break
                return "".join(path) or None
        except (OSError, ELFError, ValueError, KeyError, IndexError):
            return None


def _name(die) -> str:
    a = die.attributes.get("DW_AT_name")
    return a.value.decode("utf-8", "replace") if a else "?"


def _strip_type(die):
    while die is not None and die.tag in (
        "DW_TAG_typedef",
        "DW_TAG_const_type",
        "DW_TAG_volatile_type",
        "DW_TAG_atomic_type",
    ):
        if "DW_AT_type" not in die.attributes:
            return None
        die = die.get_DIE_from_attribute("DW_AT_type")
    return die


def _addr2line(path: str, addrs: list[int]) -> dict[int, list[Location]]:
    tool = shutil.which("addr2line")
    if tool is None:
        raise LocktuneError("addr2line not found: install binutils (scripts/bootstrap does)")
    proc = subprocess.run(
        [tool, "-e", path, "-a", "-f", "-i", "-C"],
        input="".join(f"{a:#x}\n" for a in addrs),
        capture_output=True,
        text=True,
        timeout=300,
    )
    out: dict[int, list[Location]] = {}
    lines = proc.stdout.splitlines()
    current: int | None = None
    i = 0
    while i < len(lines):
        ln = lines[i]
        if _ADDR_LINE.match(ln):
            current = int(ln, 16)
            out[current] = []
            i += 1
            continue
        if current is None or i + 1 >= len(lines):
            break
        fn, where = ln, lines[i + 1]
        i += 2
        where = where.split(" (discriminator")[0]
        file, _, line = where.rpartition(":")
        ok = file and file != "??" and line.isdigit() and line != "0"
        out[current].append(
            Location(
                None if fn == "??" else fn,
                file if ok else None,
                int(line) if ok else None,
            )
        )
    return out


def _dwarf_variables(elf: ELFFile) -> dict[int, Variable]:
    if not elf.has_dwarf_info():
        return {}
    dwarf = elf.get_dwarf_info()
    found: dict[int, Variable] = {}
    for cu in dwarf.iter_CUs():
        top = cu.get_top_DIE()
        comp_dir = top.attributes.get("DW_AT_comp_dir")
        comp_dir = comp_dir.value.decode("utf-8", "replace") if comp_dir else ""
        lineprog = None
        for die in cu.iter_DIEs():
            if die.tag != "DW_TAG_variable":
                continue
            addr = _static_address(dwarf, cu, die.attributes.get("DW_AT_location"))
            if addr is None:
                continue
            spec = die
            if "DW_AT_name" not in die.attributes:
                for ref in ("DW_AT_specification", "DW_AT_abstract_origin"):
                    if ref in die.attributes:
                        spec = die.get_DIE_from_attribute(ref)
                        break
            name = _name(spec)
            src = die if "DW_AT_decl_line" in die.attributes else spec
            line = src.attributes.get("DW_AT_decl_line")
            fidx = src.attributes.get("DW_AT_decl_file")
            file = None
            if fidx is not None:
                if lineprog is None:
                    lineprog = dwarf.line_program_for_CU(cu)
                file = _file_name(lineprog, comp_dir, fidx.value)
            tdie = (die if "DW_AT_type" in die.attributes else spec).attributes.get("DW_AT_type")
            type_off = None
            is_array = False
            if tdie is not None:
                t = _strip_type(
                    (die if "DW_AT_type" in die.attributes else spec).get_DIE_from_attribute(
                        "DW_AT_type"
                    )
                )
                if t is not None:
                    is_array = t.tag == "DW_TAG_array_type"
                    type_off = t.offset
            found.setdefault(
                addr,
                Variable(name, file, line.value if line else None, addr, is_array, type_off),
            )
    return found


def _static_address(dwarf, cu, loc) -> int | None:
    """The address of a variable whose location is one static address: DW_OP_addr ADDR, or
    (DWARF 5, clang's default) DW_OP_addrx INDEX into .debug_addr."""
    if loc is None or not isinstance(loc.value, list) or not loc.value:
        return None
    op, operand = loc.value[0], loc.value[1:]
    if op == _DW_OP_ADDR and len(operand) == 8:
        return int.from_bytes(bytes(operand), "little")
    if op in _DW_OP_ADDRX:
        index, shift, used = 0, 0, 0
        for byte in operand:  # ULEB128: the whole expression is this one operation
            index |= (byte & 0x7F) << shift
            shift += 7
            used += 1
            if not byte & 0x80:
                break
        if used != len(operand):
            return None
        try:
            return dwarf.get_addr(cu, index)
        except Exception:  # no .debug_addr, no DW_AT_addr_base: not a static we can place
            return None
    return None


def _file_name(lineprog, comp_dir: str, index: int) -> str | None:
    if lineprog is None:
        return None
    hdr = lineprog.header
    entries = hdr["file_entry"]
    dirs = hdr["include_directory"]
    if hdr["version"] >= 5:
        if not 0 <= index < len(entries):
            return None
        fe = entries[index]
        d = dirs[fe.dir_index] if fe.dir_index < len(dirs) else b""
    else:
        if not 1 <= index <= len(entries):
            return None
        fe = entries[index - 1]
        d = comp_dir.encode() if fe.dir_index == 0 else dirs[fe.dir_index - 1]
    name = fe.name.decode("utf-8", "replace")
    d = d.decode("utf-8", "replace") if isinstance(d, bytes) else d
    if not os.path.isabs(name):
        name = os.path.join(d, name) if d else name
    if not os.path.isabs(name) and comp_dir:
        name = os.path.join(comp_dir, name)
    return os.path.normpath(name)
