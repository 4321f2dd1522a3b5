"""Link utilisation = delivered bits / (capacity × window)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from transportlab.artefacts.packetlog import DEPARTURE
from transportlab.metrics._records import col, window_mask
from transportlab.metrics.throughput import throughput_by_flow


def utilisation(delivered_bits: float, capacity_bps: float, window_s: float) -> float:
    """Utilisation (fraction, 1.0 = full) = delivered_bits / (capacity_bps × window_s).

    Units: bits, bits/s, seconds. Raises ValueError for a non-positive capacity or window.
    """
    if capacity_bps <= 0 or window_s <= 0:
        raise ValueError(f"utilisation needs positive capacity and window, got {capacity_bps} bit/s, {window_s} s")
    return float(delivered_bits) / (capacity_bps * window_s)


def link_utilisation(records, direction: int, capacity_bps: float, start_ns: int, end_ns: int) -> float:
    """Utilisation of link direction `direction` over [start_ns, end_ns) (fraction).

    Definition: 8 × (sum of IP total lengths of every departure from `direction` — all
    flows, duplicate copies included — with start_ns <= t < end_ns) divided by
    capacity_bps × (end_ns − start_ns)/1e9. `capacity_bps` is the configured rate in bits/s.
    """
    t = col(records, "t_ns")
    mask = (col(records, "event") == DEPARTURE) & (col(records, "direction") == direction)
    mask &= window_mask(t, start_ns, end_ns)
    bits = 8 * int(col(records, "size")[mask].sum(dtype=np.int64))
    return utilisation(bits, capacity_bps, (end_ns - start_ns) / 1e9)


def utilisation_over_time(
    records, direction: int, capacity_bps: float, bin_ns: int, origin_ns: int = 0, end_ns: int | None = None
) -> pd.Series:
    """Utilisation of link direction `direction` per bin (fraction), indexed by bin start
    `t_ns`: `link_utilisation` with each bin [origin + k·w, origin + (k+1)·w) as the
    window, i.e. the bits of every departure from the direction (all flows, copies
    included, model time `t_ns`) in the bin ÷ (capacity_bps × w)."""
    if capacity_bps <= 0:
        raise ValueError(f"utilisation needs a positive capacity, got {capacity_bps} bit/s")
    bps = throughput_by_flow(records, direction, bin_ns, origin_ns, end_ns).sum(axis=1)
    return (bps / capacity_bps).rename("utilisation")
