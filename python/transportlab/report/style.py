"""Shared matplotlib styling and unit helpers for the report plots (Agg backend only)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import matplotlib

matplotlib.use("Agg", force=True)

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

RC = {
    "figure.figsize": (9.0, 4.2),
    "figure.dpi": 110,
    "savefig.dpi": 110,
    "savefig.bbox": "tight",
    "font.size": 10,
    "axes.titlesize": 11.5,
    "axes.titleweight": "bold",
    "axes.labelsize": 10,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "grid.linestyle": "-",
    "axes.spines.top": False,
    "axes.spines.right": False,
    "legend.fontsize": 9,
    "legend.frameon": False,
    "lines.linewidth": 1.4,
}

PALETTE = list(plt.get_cmap("tab10").colors)  # type: ignore[attr-defined]  # a ListedColormap


class Colors:
    """A stable colour per name (a flow keeps its colour in every plot of a report)."""

    def __init__(self, names: Iterable[str] = ()):
        self._map: dict[str, tuple] = {}
        for n in names:
            self[n]

    def assign(self, name: str, color) -> None:
        """Gives `name` a colour chosen elsewhere (a series drawn in its flow's colour)."""
        self._map[name] = color

    def __getitem__(self, name: str):
        if name not in self._map:
            self._map[name] = PALETTE[len(self._map) % len(PALETTE)]
        return self._map[name]


def figure(nrows: int = 1, ncols: int = 1, **kw):
    with plt.rc_context(RC):  # type: ignore[arg-type]  # stubs list rc keys as Literals
        return plt.subplots(nrows, ncols, **kw)


def save(fig, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with plt.rc_context(RC):  # type: ignore[arg-type]  # stubs list rc keys as Literals
        fig.savefig(path)
    plt.close(fig)
    return path


def rate_scale(max_bps: float) -> tuple[float, str]:
    """Divisor and unit label for a rate axis: bit/s, kbit/s, Mbit/s or Gbit/s."""
    m = abs(max_bps) if np.isfinite(max_bps) else 0.0
    for div, unit in ((1e9, "Gbit/s"), (1e6, "Mbit/s"), (1e3, "kbit/s")):
        if m >= div:
            return div, unit
    return 1.0, "bit/s"


def legend(ax, **kw):
    handles, labels = ax.get_legend_handles_labels()
    if handles:
        kw.setdefault("loc", "best")
        ax.legend(**kw)


def legend_below(ax, max_columns: int = 4) -> None:
    """A legend under the x axis label, out of the data's way (time series); long labels
    take fewer columns so the legend stays as wide as the plot."""
    handles, labels = ax.get_legend_handles_labels()
    if handles:
        longest = max(len(l) for l in labels)
        ncol = max(1, min(len(handles), max_columns, 120 // max(longest, 1)))
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=ncol)
