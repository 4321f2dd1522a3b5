"""Bytes delivered per flow in a window (from the log) and goodput (from agent values)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from transportlab.artefacts.packetlog import DEPARTURE
from transportlab.metrics._records import actual_t, and_mask, col, window_mask
from transportlab.metrics.logflows import Flow, flow_mask, flow_path


def bytes_delivered(
    records,
    flow: Flow,
    start_ns: int | None = None,
    end_ns: int | None = None,
    direction: int | None = None,
    path: Sequence[int] | None = None,
) -> int:
    """Bytes of `flow` delivered in the window [start_ns, end_ns) (either bound optional).

    Definition: sum of the IP total lengths of the flow's departure records at `direction`
    (default: the last direction of its path — `path[-1]` if given, else the path inferred
    by `flows.flow_path`) whose time is inside the window. Every departure counts,
    retransmissions and duplicate copies included: these are the bytes the network handed
    over, not application goodput. Returns an int (bytes); 0 if the flow never departed.
    """
    if direction is None:
        p = tuple(path) if path is not None else flow_path(records, flow)
        if not p:
            return 0
        direction = p[-1]
    mask = flow_mask(records, flow) & (col(records, "event") == DEPARTURE) & (col(records, "direction") == direction)
    mask = and_mask(mask, window_mask(actual_t(records), start_ns, end_ns))
    return int(col(records, "size")[mask].sum(dtype=np.int64))


def goodput(payload_bytes: int | float, start_ns: int, end_ns: int) -> float:
    """Goodput in bits/s = 8 · payload_bytes / ((end_ns − start_ns) / 1e9).

    Definition (from the agent's summary): `payload_bytes` is the application payload the
    receiver got (no headers, no retransmitted or duplicate bytes counted twice);
    `start_ns` is when the sender began the transfer, *before* connection set-up (so the
    handshake is part of the time); `end_ns` is the completion: when the last payload byte
    was delivered to the receiving application. Times in ns on the shared
    CLOCK_MONOTONIC. Raises ValueError if end_ns <= start_ns.
    """
    if end_ns <= start_ns:
        raise ValueError(f"goodput needs end_ns > start_ns, got start {start_ns} end {end_ns}")
    return 8.0 * float(payload_bytes) / ((end_ns - start_ns) / 1e9)
