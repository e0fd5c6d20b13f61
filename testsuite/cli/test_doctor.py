"""`locktune doctor` reports what the machine offers, from real probes.

The hardware-counter answer is checked against an independent perf_event_open() issued here
through ctypes, so the test follows the machine: on this VM (no PMU) both say "unavailable",
on a machine with counters both say "available".
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import platform
import re
import struct
import subprocess

from locktune import machine

SYS_perf_event_open = {"x86_64": 298, "aarch64": 241}.get(platform.machine())
PERF_TYPE_HARDWARE = 0
PERF_COUNT_HW_CACHE_MISSES = 3


def independent_cache_miss_probe() -> int:
    """perf_event_open(HW cache misses, user only) here; returns 0 or the errno."""
    assert SYS_perf_event_open is not None, "unsupported architecture for this test"
    attr = bytearray(128)  # struct perf_event_attr, PERF_ATTR_SIZE_VER7 fits in 128 bytes
    struct.pack_into("=IIQ", attr, 0, PERF_TYPE_HARDWARE, len(attr), PERF_COUNT_HW_CACHE_MISSES)
    # flags word at offset 40: disabled (bit 0) | exclude_kernel (bit 5) | exclude_hv (bit 6)
    struct.pack_into("=Q", attr, 40, (1 << 0) | (1 << 5) | (1 << 6))
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    buf = (ctypes.c_char * len(attr)).from_buffer(attr)
    fd = libc.syscall(SYS_perf_event_open, buf, 0, -1, -1, 0)
    if fd < 0:
        return ctypes.get_errno()
    os.close(fd)
    return 0


def doctor_json(run_locktune, *args):
    res = run_locktune("doctor", "--json", *args)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def test_pmu_matches_an_independent_probe(run_locktune):
    d = doctor_json(run_locktune)
    err = independent_cache_miss_probe()
    pmu = d["pmu"]
    assert isinstance(pmu["available"], bool)
    if err == 0:
        assert pmu["available"] is True, pmu
        assert pmu["reason"] is None
    else:
        assert pmu["available"] is False, pmu
        # The reason names the failing call and its errno, as the kernel gave it here.
        assert pmu["reason"], pmu
        assert pmu["open_errno"] == err or pmu["pfm_error"] != 0, (pmu, err)
        if pmu["open_errno"] == err:
            assert errno.errorcode[err] in pmu["reason"], pmu["reason"]


def test_pmu_unknown_event_is_explained_by_libpfm(run_locktune):
    d = doctor_json(run_locktune, "--pmu", "NO_SUCH_EVENT_XYZ")
    pmu = d["pmu"]
    assert pmu["available"] is False
    assert pmu["pfm_error"] < 0
    assert "cannot encode event 'NO_SUCH_EVENT_XYZ'" in pmu["reason"]


def test_pmu_software_event_encodes_and_counts(run_locktune):
    """A software event goes through the same libpfm4 + perf_event_open path and works on
    every Linux machine: proves the probe is live, not a constant 'unavailable'."""
    d = doctor_json(run_locktune, "--pmu", "perf::PERF_COUNT_SW_PAGE_FAULTS")
    pmu = d["pmu"]
    assert pmu["available"] is True, pmu
    assert pmu["type"] == 1  # PERF_TYPE_SOFTWARE
    assert pmu["count"] > 0  # the 8 MiB walk faults pages in


def test_machine_facts(run_locktune):
    d = doctor_json(run_locktune)
    assert d["cpu"]["count"] == os.cpu_count()
    with open("/proc/sys/kernel/perf_event_paranoid") as f:
        assert d["perf_event_paranoid"] == int(f.read())
    assert d["kernel"] == platform.release()
    assert d["toolchain"]["glibc"] == os.confstr("CS_GNU_LIBC_VERSION").split()[-1]
    assert "clang version" in d["toolchain"]["clang"]
    assert "spatch version" in d["toolchain"]["spatch"]
    assert isinstance(d["sched_fifo"]["permitted"], bool)
    # Independent check with util-linux's chrt: run `true` under SCHED_FIFO priority 1.
    chrt = subprocess.run(["chrt", "-f", "1", "true"], capture_output=True)
    assert d["sched_fifo"]["permitted"] is (chrt.returncode == 0)
    for key in ("liblocktune", "profiler", "extract"):
        assert d["libraries"][key] and os.path.exists(d["libraries"][key])


def test_table_output(run_locktune):
    res = run_locktune("doctor")
    assert res.returncode == 0
    assert "hardware counters" in res.stdout
    assert "SCHED_FIFO" in res.stdout


def test_group_scheduling_and_the_6_18_starvation_bug(run_locktune):
    # The autogroup setting as the kernel says it; the warning for the releases whose fair
    # scheduler re-places a running group at each reweight (6.18 before 6.18.45).
    d = doctor_json(run_locktune)
    with open("/proc/sys/kernel/sched_autogroup_enabled") as f:
        assert d["scheduler"]["autogroup"] is (f.read().strip() != "0")
    major, minor, patch = ([int(x) for x in re.findall(r"\d+", platform.release())] + [0, 0])[:3]
    affected = (major, minor) == (6, 18) and patch < 45
    assert d["scheduler"]["group_starvation_bug"] is affected
    table = run_locktune("doctor").stdout
    assert "group scheduling" in table
    assert ("6.18.45" in table) is affected
    for release, expected in (
        ("6.18.44-fc", True),
        ("6.18.45", False),
        ("6.18", True),
        ("6.19.1", False),
        ("6.12.40", False),
    ):
        assert machine.scheduler(release, 1)["group_starvation_bug"] is expected, release
