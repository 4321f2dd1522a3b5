"""What every plot module shares: the `Plot` record a plot function returns, each plot's
declaration (`PlotSpec`: key, title, what it is drawn from) and the registry of plot
functions built on it, the guard that turns an unexpected error into a skipped plot, the
run's time axis and the rule for a logarithmic axis.

A plot is declared once, where its function is: `@registered(key, title, needs)` makes
the function a `PlotFunction` (called as before; its declaration is passed to it first)
and enters it in `REGISTRY`. Every record it gives (drawn, skipped, failed) carries that
key and title, so the reports' figures and "Plots not drawn" lists name a plot alike."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from transportlab.report import style
from transportlab.report.rundata import RunData
from transportlab.report.style import legend, legend_below

# An axis is logarithmic when its positive values span more than this many decades.
LOG_AXIS_DECADES = 1.5

# What a plot is drawn from (`PlotSpec.needs`), which is also how it is called.
RUN = "run"  # one run's data: (RunData, out, Colors)
PACKET_LOG = "packet log"  # as RUN, from the run's packet log: not drawn without one
SWEEP = "sweep"  # the catalogue rows of a sweep's (or compare's) runs: (DataFrame, …, out)
SOURCES = "sources"  # compare's sources, each a point's runs: (sources, out, …)

# Why a plot drawn from the packet log is not drawn.
NO_PACKET_LOG = "no packet log (raw/packets.tlog)"


@dataclass
class Plot:
    key: str  # file stem
    title: str
    caption: str  # what the plot shows and how it was computed
    path: Path | None = None
    skipped: str | None = None  # why there is no plot
    applies: bool = True  # False: the run has nothing this plot is about (no multipath direction…)


@dataclass(frozen=True)
class PlotSpec:
    """One plot as the reports know it: its file stem, its title (the figure's, the
    caption's and the "not drawn" line's), what it is drawn from (RUN, PACKET_LOG,
    SWEEP or SOURCES) and its fixed caption, if it has one (its function's docstring)."""

    key: str
    title: str
    needs: str
    caption: str

    def skip(self, caption: str, why: str, fig=None) -> Plot:
        """The plot's data is missing: the report lists it under "Plots not drawn" (`fig`,
        a figure begun for it, is closed)."""
        if fig is not None:
            close(fig)
        return Plot(self.key, self.title, caption, None, why)

    def not_applicable(self, caption: str, why: str, fig=None) -> Plot:
        """The run or sweep has nothing this plot is about: the report leaves it out (`fig`,
        a figure begun for it, is closed)."""
        if fig is not None:
            close(fig)
        return Plot(self.key, self.title, caption, None, why, applies=False)

    def saved(self, fig, out: Path, caption: str) -> Plot:
        """The drawn figure saved as out/<key>.png."""
        return Plot(self.key, self.title, caption, style.save(fig, out / f"{self.key}.png"))

    def finish(
        self,
        fig,
        ax,
        out: Path,
        caption: str,
        *,
        rd: RunData | None = None,
        legend_at: str | None = "below",
    ) -> Plot:
        """A one-axis plot finished: the run's time axis (when `rd` is given), the title,
        the legend ("below" the axis, a matplotlib location, or None for none), saved."""
        if rd is not None:
            time_axis(ax, rd)
        ax.set_title(self.title)
        if legend_at == "below":
            legend_below(ax)
        elif legend_at is not None:
            legend(ax, loc=legend_at)
        return self.saved(fig, out, caption)


@dataclass(frozen=True)
class PlotFunction(PlotSpec):
    """A plot function with its declaration: calling it calls `draw(self, *args)`, unless
    what it needs is missing (a PACKET_LOG plot of a run without one is skipped)."""

    draw: Callable[..., Plot]

    def __call__(self, *args) -> Plot:
        if self.needs == PACKET_LOG and args[0].records is None:
            return self.skip("", NO_PACKET_LOG)
        return self.draw(self, *args)


# Every registered plot by key, in the order their modules declare them.
REGISTRY: dict[str, PlotFunction] = {}


def registered(key: str, title: str, needs: str) -> Callable[[Callable[..., Plot]], PlotFunction]:
    """Declares the decorated plot function under `key` and `title` and registers it; its
    docstring, if it has one, is the plot's caption (what it shows and how it was computed)."""

    def register(draw: Callable[..., Plot]) -> PlotFunction:
        if key in REGISTRY:
            first = REGISTRY[key].draw
            raise ValueError(
                f"plot key {key!r} registered twice: {first.__module__}.{first.__qualname__}, "
                f"{draw.__module__}.{draw.__qualname__}"
            )
        caption = " ".join((draw.__doc__ or "").split())
        plot = REGISTRY[key] = PlotFunction(key, title, needs, caption, draw)
        return plot

    return register


def safe(plot: PlotFunction, *args) -> Plot:
    """Runs a plot function; an unexpected error becomes a skipped plot with the message
    (a report must never fail on one plot)."""
    try:
        return plot(*args)
    except Exception as e:  # noqa: BLE001 - reported in the page
        return plot.skip("", f"failed: {type(e).__name__}: {e}")


def time_axis(ax, rd: RunData) -> None:
    ax.set_xlabel("time since scenario start (s)")
    if rd.duration_s:
        ax.set_xlim(0, rd.duration_s)


def spans_decades(values, decades: float = LOG_AXIS_DECADES) -> bool:
    """True when the positive finite values span more than `decades` decades (max/min >
    10**decades): such an axis is drawn logarithmic."""
    v = np.asarray(values, dtype=np.float64)
    v = v[np.isfinite(v) & (v > 0)]
    return bool(len(v)) and float(v.max()) / float(v.min()) > 10**decades


def close(fig) -> None:
    import matplotlib.pyplot as plt

    plt.close(fig)
