"""What every plot module shares: the `Plot` record a plot function returns, the skipped
plot, the guard that turns an unexpected error into a skipped plot, the run's time axis,
the rule for a logarithmic axis, and the one way a drawn plot is finished and saved."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from transportlab.report.rundata import RunData
from transportlab.report.style import legend, legend_below, save

# An axis is logarithmic when its positive values span more than this many decades.
LOG_AXIS_DECADES = 1.5


@dataclass
class Plot:
    key: str  # file stem
    title: str
    caption: str  # what the plot shows and how it was computed
    path: Path | None = None
    skipped: str | None = None  # why there is no plot
    applies: bool = True  # False: the run has nothing this plot is about (no multipath direction…)


def skip(key: str, title: str, caption: str, why: str) -> Plot:
    """A plot whose data is missing: the report lists it under "Plots not drawn"."""
    return Plot(key, title, caption, None, why)


def not_applicable(key: str, title: str, caption: str, why: str) -> Plot:
    """A plot about something the run or sweep does not have: the report leaves it out."""
    return Plot(key, title, caption, None, why, applies=False)


def safe(fn, key: str, title: str, *args) -> Plot:
    """Runs a plot function; an unexpected error becomes a skipped plot with the message
    (a report must never fail on one plot)."""
    try:
        return fn(*args)
    except Exception as e:  # noqa: BLE001 - reported in the page
        return skip(key, title, "", f"failed: {type(e).__name__}: {e}")


def time_axis(ax, rd: RunData) -> None:
    ax.set_xlabel("time since scenario start (s)")
    if rd.duration_s:
        ax.set_xlim(0, rd.duration_s)


def finish(
    fig,
    ax,
    out: Path,
    key: str,
    title: str,
    caption: str,
    *,
    rd: RunData | None = None,
    legend_at: str | None = "below",
) -> Plot:
    """A drawn plot finished: the run's time axis (when `rd` is given), the title, the
    legend ("below" the axis, a matplotlib location, or None for none), saved as
    out/<key>.png."""
    if rd is not None:
        time_axis(ax, rd)
    ax.set_title(title)
    if legend_at == "below":
        legend_below(ax)
    elif legend_at is not None:
        legend(ax, loc=legend_at)
    return Plot(key, title, caption, save(fig, out / f"{key}.png"))


def spans_decades(values, decades: float = LOG_AXIS_DECADES) -> bool:
    """True when the positive finite values span more than `decades` decades (max/min >
    10**decades): such an axis is drawn logarithmic."""
    v = np.asarray(values, dtype=np.float64)
    v = v[np.isfinite(v) & (v > 0)]
    return bool(len(v)) and float(v.max()) / float(v.min()) > 10**decades


def close(fig) -> None:
    import matplotlib.pyplot as plt

    plt.close(fig)
