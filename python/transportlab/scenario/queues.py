"""Queue sizes written as a multiple of the bandwidth-delay product.

The S0 study's convention (docs/algorithms.md): q = BDP·x with BDP = bandwidth × RTT, in
packets of 1500 bytes. Here bandwidth is the constant `rate` of the link direction that
owns the queue, and RTT is the round trip *of that link*: its forward delay plus its
reverse delay (= 2 × the one-way delay of a symmetric bottleneck), unless the queue
gives `rtt` explicitly (use that when delay sits on other links of the path). The
result is rounded up, and is at least one packet.
"""

from __future__ import annotations

import math

PACKET_BYTES = 1500


def bdp_packets(rate_bps: float, rtt_s: float, multiple: float) -> int:
    """⌈rate · rtt · multiple / 8 / 1500⌉, at least 1."""
    packets = rate_bps * rtt_s * multiple / 8 / PACKET_BYTES
    # Round away float noise first, so an exact 100.0 does not become 101.
    return max(1, math.ceil(round(packets, 6)))
