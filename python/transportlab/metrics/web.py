"""Web pages (tcp flows with `page`), from the client's per-object series (one row per
object asked for: `page`, `object` (0 = primary), `request_ns`, `first_byte_ns`,
`complete_ns`, `page_start_ns`, `page_end_ns`; CLOCK_MONOTONIC, null = never)."""

from __future__ import annotations

import numpy as np
import pandas as pd


def page_times(series: pd.DataFrame) -> np.ndarray:
    """Page time (ns) of each completed page: its primary asked for → its last object
    complete, in page order. Pages cut off by the end of the flow are left out."""
    if not len(series):
        return np.zeros(0)
    p = series.drop_duplicates("page").sort_values("page")
    p = p[p["page_end_ns"].notna()]
    return (p["page_end_ns"].to_numpy(np.float64) - p["page_start_ns"].to_numpy(np.float64)).astype(np.float64)


def object_ttfb(series: pd.DataFrame) -> np.ndarray:
    """Time to first byte (ns) of each object that got one: asked for → first byte
    handed to the application (the primary: the page's request; a secondary: the
    request for the secondaries, sent when the primary completed)."""
    if not len(series):
        return np.zeros(0)
    s = series[series["first_byte_ns"].notna()]
    return (s["first_byte_ns"].to_numpy(np.float64) - s["request_ns"].to_numpy(np.float64)).astype(np.float64)


def ms_stats(ns: np.ndarray) -> dict[str, float] | None:
    """mean, p50, p90, p99 and max in ms; None when empty."""
    v = np.asarray(ns, dtype=np.float64) / 1e6
    if not len(v):
        return None
    p50, p90, p99 = np.percentile(v, [50, 90, 99])
    return {"mean": float(v.mean()), "p50": float(p50), "p90": float(p90), "p99": float(p99), "max": float(v.max())}
