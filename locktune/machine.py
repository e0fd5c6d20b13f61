"""The machine a measurement ran on, as every benchmark result and profile records it."""

from __future__ import annotations

import os
import platform
import time


def cpu_info() -> dict:
    """CPU model, logical CPU count, usable CPUs, TSC invariance, virtualisation."""
    model, flags = None, set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                key = key.strip()
                if key == "model name" and model is None:
                    model = value.strip()
                elif key == "flags" and not flags:
                    flags = set(value.split())
    except OSError:
        pass
    return {
        "model": model or platform.processor() or "unknown",
        "count": os.cpu_count(),
        "usable": len(os.sched_getaffinity(0)),
        "invariant_tsc": {"constant_tsc", "nonstop_tsc"} <= flags,
        "hypervisor": "hypervisor" in flags,
    }


def describe(pmu: dict | None = None) -> dict:
    """What a benchmark result must say about its machine.  `pmu` is doctor's probe result
    (pass it when known; probing costs a subprocess)."""
    if pmu is None:
        from locktune.commands.doctor import pmu_probe

        pmu = pmu_probe()
    cpu = cpu_info()
    return {
        "cpu_model": cpu["model"],
        "cpus": cpu["count"],
        "usable_cpus": cpu["usable"],
        "virtual_machine": cpu["hypervisor"],
        "kernel": platform.release(),
        "hardware_counters": bool(pmu.get("available")),
        "hardware_counters_reason": pmu.get("reason"),
        "load_average": os.getloadavg(),
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
