"""Summary statistics of an array in one call."""

from __future__ import annotations

import numpy as np


def summarize(values) -> dict[str, float]:
    """count, mean, p50, p95, p99 (and min, max) of `values`, NaN entries ignored.

    Percentiles use NumPy's default linear interpolation between order statistics.
    Statistics are in the unit of the input; all NaN (count 0) for an empty input.
    """
    v = np.asarray(values, dtype=np.float64)
    v = v[~np.isnan(v)]
    if len(v) == 0:
        nan = float("nan")
        return {"count": 0, "mean": nan, "p50": nan, "p95": nan, "p99": nan, "min": nan, "max": nan}
    p50, p95, p99 = np.percentile(v, [50, 95, 99])
    return {
        "count": int(len(v)),
        "mean": float(v.mean()),
        "p50": float(p50),
        "p95": float(p95),
        "p99": float(p99),
        "min": float(v.min()),
        "max": float(v.max()),
    }
