"""Per-record latency of a records workload (tcp flows with `size` and `interval`), from
the receiving agent's per-record series: one row per record handed to the application,
`id`, `send_ns` (the sender's clock just before the write) and `deliver_ns` (when the
receiver handed the record over), both CLOCK_MONOTONIC."""

from __future__ import annotations

import numpy as np
import pandas as pd


def record_latencies(series: pd.DataFrame) -> np.ndarray:
    """Latency = deliver_ns − send_ns (ns) of each distinct record id, taking a record's
    first delivery should an id appear twice; in id order."""
    if not len(series):
        return np.zeros(0, dtype=np.float64)
    first = series.sort_values(["id", "deliver_ns"]).drop_duplicates("id", keep="first")
    return (first["deliver_ns"].to_numpy(np.int64) - first["send_ns"].to_numpy(np.int64)).astype(np.float64)


def late_share(latency_ns: np.ndarray, sent: int, rtt_ns: float) -> float | None:
    """Share of the records sent that were delayed by at least one RTT.

    A record's delay is its latency minus the smallest latency among the flow's records
    (what every record pays: one-way propagation, serialisation, the stacks); a record
    waiting for the repair of a loss pays at least one more round trip. Records sent but
    never delivered count as late. None when nothing was sent or there is no RTT.
    """
    if sent <= 0 or not rtt_ns or rtt_ns <= 0:
        return None
    lat = np.asarray(latency_ns, dtype=np.float64)
    lat = lat[np.isfinite(lat)]
    undelivered = max(0, sent - len(lat))
    late = int(np.count_nonzero(lat - lat.min() >= rtt_ns)) if len(lat) else 0
    return (late + undelivered) / sent
