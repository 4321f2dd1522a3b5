"""The form of a scenario's `net.ipv4.tcp_rmem` sysctl, the one kernel setting both the
emulated hosts and the simulator's TCP take (network.buffers, run.simulate)."""

from __future__ import annotations

TCP_RMEM = "net.ipv4.tcp_rmem"
TCP_RMEM_FORM = "three whole numbers of bytes, 'min default max', each at least 1 (as Linux takes tcp_rmem)"


def parse_tcp_rmem(value: object) -> tuple[int, int, int] | None:
    """tcp_rmem's (min, default, max) from a scenario's value, None if it is not three
    whole numbers ≥ 1 separated by blanks."""
    parts = str(value).split()
    if len(parts) != 3 or not all(p.isdigit() and int(p) >= 1 for p in parts):
        return None
    lo, default, hi = (int(p) for p in parts)
    return lo, default, hi
