"""Internal helpers shared by the metric modules: column access and windows that work the
same on the structured NumPy array of `packetlog.read_records` and on the DataFrame of
`packetlog.read_frame`."""

from __future__ import annotations

import numpy as np
import pandas as pd


def col(records, name: str) -> np.ndarray:
    """One column of the log as a NumPy array (a view where possible)."""
    return np.asarray(records[name])


def actual_t(records) -> np.ndarray:
    """Real event times (packet log v2 `t_actual_ns`: the kernel's receive stamp of an
    arrival from a host, the hand-over of a departure to a host), falling back to the
    model's `t_ns` where a record has none (0, as in hand-made logs)."""
    t = np.asarray(records["t_ns"])
    names = records.dtype.names if isinstance(records, np.ndarray) else records.columns
    if "t_actual_ns" not in names:
        return t
    a = np.asarray(records["t_actual_ns"])
    return np.where(a != 0, a, t)


def take(records, mask: np.ndarray):
    """The rows of `records` where `mask` is true, keeping the container type."""
    if isinstance(records, pd.DataFrame):
        return records.loc[mask]
    return records[mask]


def window_mask(t_ns: np.ndarray, start_ns: int | None, end_ns: int | None) -> np.ndarray | None:
    """Boolean mask of `start_ns <= t < end_ns` (half-open); None when no bound is given."""
    mask = None
    if start_ns is not None:
        mask = t_ns >= np.uint64(start_ns) if t_ns.dtype == np.uint64 else t_ns >= start_ns
    if end_ns is not None:
        m = t_ns < np.uint64(end_ns) if t_ns.dtype == np.uint64 else t_ns < end_ns
        mask = m if mask is None else mask & m
    return mask


def and_mask(a: np.ndarray | None, b: np.ndarray | None) -> np.ndarray | None:
    if a is None:
        return b
    if b is None:
        return a
    return a & b
