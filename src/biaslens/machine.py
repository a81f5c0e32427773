"""The facts about this machine that decide how fast a run is: CPU model, the vector
instruction sets torch can use, cores, and library versions. Recorded in run.json and
in every benchmark's JSON, so a timing always names the machine it was measured on."""

from __future__ import annotations

import os
import platform
import sys
from functools import lru_cache
from importlib import metadata

#: instruction-set flags that change CPU matmul speed (what /proc/cpuinfo calls them)
SPEED_FLAGS = ("avx", "avx2", "fma", "avx512f", "avx512_bf16", "avx512_vnni", "avx_vnni", "amx_bf16", "amx_tile",
               "amx_int8")


def parse_cpuinfo(text: str) -> tuple[str | None, tuple[str, ...]]:
    """CPU model and the speed-relevant flags of the first processor in /proc/cpuinfo text.

    >>> parse_cpuinfo("processor: 0\\nmodel name\\t: AMD EPYC 7B13\\nflags\\t: fpu avx avx2 fma sse4_2\\n")
    ('AMD EPYC 7B13', ('avx', 'avx2', 'fma'))
    """
    model, flags = None, set()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key == "model name" and model is None:
            model = value.strip()
        elif key == "flags" and not flags:
            flags = set(value.split())
    return model, tuple(f for f in SPEED_FLAGS if f in flags)


@lru_cache(maxsize=1)
def cpu_model_and_flags() -> tuple[str, tuple[str, ...]]:
    """("AMD EPYC 7B13", ("avx", "avx2", "fma")) on Linux; the platform's processor string elsewhere."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            model, flags = parse_cpuinfo(f.read())
    except OSError:
        model, flags = None, ()
    return model or platform.processor() or platform.machine(), flags


def machine_facts() -> dict:
    """CPU model, speed-relevant flags, cores, Python and (when installed) torch."""
    model, flags = cpu_model_and_flags()
    facts = {"cpu_model": model, "cpu_flags": list(flags), "cpus": os.cpu_count(), "machine": platform.machine(),
             "system": platform.system(), "python": sys.version.split()[0]}
    facts.update(installed_versions(("torch", "transformers")))
    return facts


def installed_versions(packages: tuple[str, ...]) -> dict[str, str]:
    """The version of each of these packages that is installed (the others are left out)."""
    versions = {}
    for package in packages:
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            pass
    return versions


def describe_machine() -> str:
    """One line for docs and logs: 'AMD EPYC 7B13, 2 cores, avx2 fma (no AVX-512)'."""
    model, flags = cpu_model_and_flags()
    vector = " ".join(f for f in flags if f not in ("avx",)) or "no AVX2"
    no512 = "" if any(f.startswith("avx512") for f in flags) else " (no AVX-512)"
    return f"{model}, {os.cpu_count()} cores, {vector}{no512}"


def busy_note(load: float | None = None, cpus: int | None = None) -> str | None:
    """A warning when other work already fills this machine's cores (1-minute load average at
    least the core count), so a slow run is not a surprise; None on an idle machine.

    >>> busy_note(load=3.2, cpus=2)
    'this machine is busy (load average 3.2 on 2 cores): expect this run to take several times longer than on an idle one'
    >>> busy_note(load=0.3, cpus=2) is None
    True
    """
    if load is None:
        try:
            load = os.getloadavg()[0]
        except (OSError, AttributeError):  # not on every platform
            return None
    if not cpus:  # the cores this process may use (a container or taskset gives fewer than the machine has)
        try:
            cpus = len(os.sched_getaffinity(0))
        except (AttributeError, OSError):
            cpus = os.cpu_count() or 1
    if load < cpus:
        return None
    return (f"this machine is busy (load average {load:.1f} on {cpus} cores): "
            "expect this run to take several times longer than on an idle one")
