"""The hosts' TCP socket-buffer limits, one rule for both ways of running a scenario:
the emulated hosts get them as `tcp_rmem`/`tcp_wmem` maxima (`network.live`), the
simulator's TCP takes its windows from them (`run.simulate`)."""

from __future__ import annotations

from transportlab.plan.topology import Topology
from transportlab.scenario.tcp_rmem import TCP_RMEM, TCP_RMEM_FORM, parse_tcp_rmem

# Linux defaults for the TCP socket-buffer settings (bytes): tcp_rmem's min and default
# (the buffer a connection starts with) and both maxima.
DEFAULT_TCP_RMEM_MIN = 4096
DEFAULT_TCP_RMEM_DEFAULT = 131_072
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


def buffer_sysctls(topology: Topology, host: str) -> dict[str, str]:
    """The sysctls that set `host`'s TCP socket-buffer limits (a scenario's own
    `sysctls` override them)."""
    rmem, wmem = tcp_buffer_limits(topology, host)
    return {
        TCP_RMEM: f"{DEFAULT_TCP_RMEM_MIN} {DEFAULT_TCP_RMEM_DEFAULT} {rmem}",
        "net.ipv4.tcp_wmem": f"4096 16384 {wmem}",
    }


def tcp_rmem(topology: Topology, host: str, sysctls: dict[str, dict[str, str]]) -> tuple[int, int, int]:
    """`host`'s tcp_rmem (min, default, max) as an emulated host gets it: the scenario's
    `sysctls`, if it sets one, over `buffer_sysctls`."""
    given = sysctls.get(host, {}).get(TCP_RMEM, buffer_sysctls(topology, host)[TCP_RMEM])
    parsed = parse_tcp_rmem(given)
    if parsed is None:  # the scenario's checks refuse it before a run is planned
        raise ValueError(f"sysctls.{host}.{TCP_RMEM}: {given!r} is not {TCP_RMEM_FORM}")
    return parsed
