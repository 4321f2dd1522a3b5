"""A congestion window's course, from its sender's series (kernel TCP's TCP_INFO, quinn's
path statistics, a QUIC stack's qlog: `cwnd_bytes`, `srtt_us`, `min_rtt_us` on a fixed
grid): how large it grew before it was first cut and when, how often it was cut, and where
it sat once the start was over.

Two flows with the same goodput can differ in kind: one whose window stops growing short of
the path's queues (a receive window, an application limit, ngtcp2 0.12.1's CUBIC ceiling of
2.89 × its delivery rate × its minimum RTT) and one cut again and again. The window over
the smoothed RTT is the rate such a window carries."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd


@dataclass(frozen=True)
class WindowCourse:
    min_rtt_ms: float | None  # None: the series has no minimum RTT
    before_first_cut_bytes: int  # the largest window before the first cut (the whole series' if none)
    first_cut_s: float | None  # from the series' first sample; None: never cut
    cuts: int  # runs of falling samples: a cut spread over several samples counts once
    median_window_bytes: float | None  # over the samples from `settle_s` on; None if there are none
    median_srtt_ms: float | None

    @property
    def window_rate_bps(self) -> float | None:
        """The rate the median window carries over the median smoothed RTT."""
        if not self.median_window_bytes or not self.median_srtt_ms:
            return None
        return self.median_window_bytes * 8 / (self.median_srtt_ms / 1e3)


def _values(series: pd.DataFrame, column: str) -> np.ndarray:
    """A column as floats, NaN where the series said nothing (or has no such column)."""
    if column not in series:
        return np.full(len(series), np.nan)
    return series[column].astype("Float64").to_numpy(dtype=np.float64, na_value=np.nan)


def window_course(series: pd.DataFrame, settle_s: float) -> WindowCourse | None:
    """The course of one connection's window (`t_ns` ascending); None when the series
    gives no window at all."""
    t_s = (series["t_ns"].to_numpy(dtype=np.int64) - int(series["t_ns"].iloc[0])) / 1e9
    cwnd = _values(series, "cwnd_bytes")
    known = ~np.isnan(cwnd)
    if not known.any():
        return None
    t_w, w = t_s[known], cwnd[known]
    falling = np.diff(w) < 0
    # A cut starts where the window falls after a sample where it did not.
    starts = np.flatnonzero(falling & ~np.concatenate(([False], falling[:-1])))
    first = int(starts[0]) + 1 if len(starts) else None
    settled = t_s >= settle_s
    window, srtt, min_rtt = cwnd[settled], _values(series, "srtt_us")[settled], _values(series, "min_rtt_us")
    return WindowCourse(
        min_rtt_ms=float(np.nanmin(min_rtt)) / 1e3 if (~np.isnan(min_rtt)).any() else None,
        before_first_cut_bytes=int(w[:first].max()),
        first_cut_s=float(t_w[first]) if first is not None else None,
        cuts=len(starts),
        median_window_bytes=_median(window),
        median_srtt_ms=None if (m := _median(srtt)) is None else m / 1e3,
    )


def _median(a: np.ndarray) -> float | None:
    a = a[~np.isnan(a)]
    return float(np.median(a)) if len(a) else None
