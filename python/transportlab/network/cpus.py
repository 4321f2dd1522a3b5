"""Which CPU a run's forwarding thread is pinned to when several runs share the machine
(`tlab run --workers N`): each engine claims a CPU no other live engine holds, so two
real-time forwarding threads never spin on the same CPU. A claim is an exclusive `flock`
on a per-CPU file: the kernel releases it when its holder exits, however it exits, so a
killed run leaves no claim behind (the empty files stay in the run registry's tmpfs)."""

from __future__ import annotations

import fcntl
import os
from dataclasses import dataclass

from transportlab.locations import RUN_REGISTRY

CLAIMS = RUN_REGISTRY / "engine-cpus"


@dataclass
class CpuClaim:
    cpu: int
    fd: int

    def release(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)  # closing the descriptor drops the lock
            self.fd = -1


def claim_engine_cpu(cpus: list[int]) -> CpuClaim | None:
    """The first of `cpus` no other live engine holds, claimed until `release` (or the
    process's end); None when every one is held."""
    CLAIMS.mkdir(parents=True, exist_ok=True)
    for cpu in cpus:
        fd = os.open(CLAIMS / f"{cpu}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        return CpuClaim(cpu, fd)
    return None
