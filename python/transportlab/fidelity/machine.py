"""What `tlab validate` measures about the machine before it judges the emulator, so a
user on another machine knows why a row fails there: how late a timer wakes a sleeping
thread after short and long sleeps (a VM's halted CPU wakes later the longer it slept),
the cpuidle driver, and the CPU latency request the runner holds during runs."""

from __future__ import annotations

import ctypes
import os
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from transportlab.network.live import CPU_LATENCY_DEVICE, DEFAULT_CPU_LATENCY_US

PR_SET_TIMERSLACK = 29
CLOCK_MONOTONIC, TIMER_ABSTIME = 1, 1
# (sleep, how many): about a second in all.
SLEEPS = ((100e-6, 50), (1e-3, 30), (10e-3, 10), (100e-3, 6))
CPUIDLE = Path("/sys/devices/system/cpu/cpuidle/current_driver")


class _Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


@dataclass(frozen=True)
class TimerLateness:
    sleep_s: float
    samples: int
    mean_us: float
    max_us: float


def timer_lateness(cpu_latency_us: int | None = DEFAULT_CPU_LATENCY_US) -> list[TimerLateness]:
    """How late `clock_nanosleep` to an absolute CLOCK_MONOTONIC deadline returns, per
    sleep length, with 1 ns timer slack (as the engine sleeps) and the CPU latency
    request a run holds (None: none)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_TIMERSLACK, 1, 0, 0, 0)
    fd = None
    if cpu_latency_us is not None:
        fd = os.open(CPU_LATENCY_DEVICE, os.O_WRONLY | os.O_CLOEXEC)
        os.write(fd, int(cpu_latency_us).to_bytes(4, "little", signed=True))
    try:
        out = []
        for sleep, n in SLEEPS:
            late = []
            for _ in range(n):
                due = time.monotonic_ns() + int(sleep * 1e9)
                ts = _Timespec(due // 1_000_000_000, due % 1_000_000_000)
                libc.clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, ctypes.byref(ts), None)
                late.append(time.monotonic_ns() - due)
            a = np.asarray(late) / 1e3
            out.append(TimerLateness(sleep, n, float(a.mean()), float(a.max())))
        return out
    finally:
        if fd is not None:
            os.close(fd)


def cpuidle_driver() -> str:
    try:
        return CPUIDLE.read_text().strip()
    except OSError:
        return "none"
