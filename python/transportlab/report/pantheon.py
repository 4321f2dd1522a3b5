"""Pantheon's summary plot: throughput against the 95th-percentile one-way delay, one
marker per scheme at the mean over its runs with the 1-σ ellipse of the runs (the
covariance of delay and throughput), the delay axis reversed so "better" is up and to
the right. Built from catalogue rows (`sweep_table`): `throughput_bps` and
`path_delay_p95_ms` (the packet log's per-packet one-way delay across the path)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.patches import Ellipse

from transportlab.report.figures import SWEEP, Plot, PlotSpec, registered
from transportlab.report.style import Colors, figure, rate_scale

DELAY = "path_delay_p95_ms"
THROUGHPUT = "throughput_bps"
MAX_PANELS = 6

CAPTION = (
    "Throughput against 95th-percentile one-way delay, as Pantheon draws it: one marker per scheme at the mean "
    "over its runs (repetitions), the ellipse its runs' 1-σ spread (covariance of delay and throughput; drawn "
    "with two or more runs). Throughput: bytes delivered by the last link direction ÷ the flow's active time; "
    "delay: 95th percentile of the per-packet one-way delay across the flow's path (real times in the engine's "
    "packet log, the flow's path_delay_ms). The delay axis is reversed: better is up and to the right."
)

# scheme label → (delays ms, throughputs bit/s) of its runs
Groups = dict[str, tuple[np.ndarray, np.ndarray]]


def sigma_ellipse(x: np.ndarray, y: np.ndarray) -> tuple[float, float, float] | None:
    """(width, height, angle in degrees) of the 1-σ ellipse of the points: axes along the
    covariance's eigenvectors, half-lengths the square roots of its eigenvalues. None
    with fewer than two points."""
    if len(x) < 2:
        return None
    cov = np.cov(np.vstack([x, y]))
    vals, vecs = np.linalg.eigh(cov)
    vals = np.clip(vals, 0.0, None)
    angle = math.degrees(math.atan2(vecs[1, -1], vecs[0, -1]))
    return 2 * math.sqrt(vals[-1]), 2 * math.sqrt(vals[0]), angle


def draw_pantheon(panels: dict[str, Groups]):
    """One axes per panel (network condition), one marker (and ellipse) per scheme."""
    peak = max((float(t.max()) for g in panels.values() for _, t in g.values() if len(t)), default=0.0)
    div, unit = rate_scale(peak)
    n = len(panels)
    ncols = min(n, 3)
    nrows = math.ceil(n / ncols)
    fig, axes = figure(nrows, ncols, figsize=(max(9.0, 4.6 * ncols), 4.4 * nrows), squeeze=False)
    schemes = list(dict.fromkeys(s for g in panels.values() for s in g))
    colors = Colors(schemes)
    markers = "osD^vP*Xh<>"
    for k, (panel, groups) in enumerate(panels.items()):
        ax = axes[k // ncols][k % ncols]
        for scheme, (d, t) in groups.items():
            i = schemes.index(scheme)
            y = t / div
            ax.plot(d, y, ".", color=colors[scheme], alpha=0.35, ms=4)
            ax.plot(
                d.mean(),
                y.mean(),
                markers[i % len(markers)],
                ms=8,
                color=colors[scheme],
                label=f"{scheme} (n={len(d)})",
            )
            e = sigma_ellipse(d, y)
            if e is not None:
                ax.add_patch(
                    Ellipse(
                        (d.mean(), y.mean()),
                        e[0],
                        e[1],
                        angle=e[2],
                        fill=False,
                        color=colors[scheme],
                        lw=1.2,
                        alpha=0.8,
                    )
                )
        ax.invert_xaxis()
        ax.set_xlabel("95th-percentile one-way delay (ms)")
        ax.set_ylabel(f"throughput ({unit})")
        ax.set_title(panel, fontsize=10)
        ax.legend(loc="best", fontsize=8)
    for k in range(n, nrows * ncols):
        axes[k // ncols][k % ncols].set_visible(False)
    fig.suptitle(plot_pantheon.title, fontweight="bold")
    fig.tight_layout()
    return fig


def _label(row: pd.Series, cols: Sequence[str], named: bool = False) -> str:
    """The row's values of `cols` joined; `named`: each as "<last path part> = value"."""
    return " · ".join(
        (f"{c.rsplit('.', 1)[-1]} = {row[c]}" if named else str(row[c]))
        for c in cols
        if c in row and not pd.isna(row[c]) and str(row[c]) != ""
    )


def pantheon_groups(df: pd.DataFrame, scheme_cols: Sequence[str], panel_cols: Sequence[str]) -> dict[str, Groups]:
    """Panel label → scheme label → the runs' (delays, throughputs); rows without both
    values are left out."""
    d = df.dropna(subset=[DELAY, THROUGHPUT])
    panels: dict[str, Groups] = {}
    labels = d.assign(
        _panel=d.apply(lambda r: _label(r, panel_cols, named=True), axis=1) if panel_cols else "",
        _scheme=d.apply(lambda r: _label(r, scheme_cols), axis=1),
    )
    for (panel, scheme), g in labels.groupby(["_panel", "_scheme"], sort=False):
        panels.setdefault(str(panel) or "all runs", {})[str(scheme) or "runs"] = (
            g[DELAY].to_numpy(np.float64),
            g[THROUGHPUT].to_numpy(np.float64),
        )
    return panels


@registered("pantheon", "Throughput vs 95th-percentile one-way delay", SWEEP)
def plot_pantheon(
    spec: PlotSpec, df: pd.DataFrame, scheme_cols: Sequence[str], panel_cols: Sequence[str], out: Path
) -> Plot:
    if DELAY not in df or df[DELAY].isna().all():
        return spec.skip(CAPTION, f"no run has {DELAY} (runs analysed before it existed: `tlab report` them)")
    panels = pantheon_groups(df, scheme_cols, panel_cols)
    if len(panels) > MAX_PANELS:
        return spec.skip(CAPTION, f"{len(panels)} network conditions: more than {MAX_PANELS} panels")
    if sum(len(g) for g in panels.values()) < 2:
        return spec.not_applicable(CAPTION, "one scheme only: nothing to compare")
    return spec.saved(draw_pantheon(panels), out, CAPTION)
