"""The hosts' TCP socket-buffer limits, one rule for both ways of running a scenario:
the emulated hosts get them as `tcp_rmem`/`tcp_wmem` maxima (`network.live`), the
simulator's TCP takes its windows from them (`run.simulate`)."""

from __future__ import annotations

from transportlab.plan.topology import Topology

# Linux defaults for the TCP socket-buffer limits (bytes).
DEFAULT_TCP_RMEM_MAX = 6_291_456
DEFAULT_TCP_WMEM_MAX = 4_194_304


def tcp_buffer_limits(topology: Topology, host: str) -> tuple[int, int]:
    """(receive, send) buffer limits of `host` large enough that no flow from or to it is
    capped below its path's bandwidth-delay product by accident: 4 × BDP (TCP's receive
    window takes about half the buffer, and the queue adds to the RTT), never below
    Linux's defaults."""
    need = 0.0
    for other in topology.hosts:
        if other == host or not topology.connected(host, other):
            continue
        rate = min(filter(None, [topology.path_rate(host, other), topology.path_rate(other, host)]), default=None)
        rtt = topology.path_rtt(host, other)
        if rate:
            need = max(need, 4 * rate / 8 * max(rtt, 0.001))
    return max(DEFAULT_TCP_RMEM_MAX, int(need)), max(DEFAULT_TCP_WMEM_MAX, int(need))
