"""Fairness between flows: Jain's index and the pairwise byte difference."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from transportlab.metrics.delivery import bytes_delivered
from transportlab.metrics.logflows import Flow


def jain_index(values) -> float:
    """Jain's fairness index (Σx)² / (n·Σx²) of non-negative values (e.g. per-flow
    throughputs or bytes over one window; any unit). 1 = all equal, 1/n = one flow has
    everything. NaN for an empty input or all zeros; ValueError for negative values."""
    x = np.asarray(values, dtype=np.float64).ravel()
    if len(x) == 0:
        return float("nan")
    if (x < 0).any():
        raise ValueError("Jain's index is defined for non-negative values")
    sq = float((x * x).sum())
    if sq == 0:
        return float("nan")
    return float(x.sum()) ** 2 / (len(x) * sq)


def byte_difference(bytes1: float, bytes2: float) -> float:
    """|D1 − D2|: absolute difference between two flows' delivered bytes over the same
    window (the Emulab study's "fairness"), in bytes."""
    return abs(float(bytes1) - float(bytes2))


def pairwise_byte_difference(
    records,
    flow1: Flow,
    flow2: Flow,
    start_ns: int | None = None,
    end_ns: int | None = None,
    direction: int | None = None,
    path1: Sequence[int] | None = None,
    path2: Sequence[int] | None = None,
) -> int:
    """|D1 − D2| in bytes, D = `delivery.bytes_delivered` of each flow in [start_ns, end_ns)
    at `direction` (default: the last direction of each flow's path)."""
    d1 = bytes_delivered(records, flow1, start_ns, end_ns, direction=direction, path=path1)
    d2 = bytes_delivered(records, flow2, start_ns, end_ns, direction=direction, path=path2)
    return abs(d1 - d2)
