"""Sweep plots of the message workloads. Record-latency CDFs per sweep point (the
head-of-line experiment's arms), log x: every records flow's per-record series (tcp and
quic clients' `<flow>-client-records.arrow`, udp receivers' `<flow>-server-records.arrow`),
pooled over a point's repetitions; a record never delivered has no latency, so a curve
ends below 1 (the delivered share). Page-time box plots per sweep point: every completed
page of the tcp page flows (`<flow>-client-page.arrow`), pooled over repetitions."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from transportlab import metrics as M
from transportlab.artefacts.rundir import read_arrow, receiver_records
from transportlab.report.figures import SWEEP, Plot, PlotSpec, registered
from transportlab.report.style import Colors, figure

CAPTION = (
    "Empirical CDF of the per-record latency (delivery to the application − the sender's "
    "write, docs/metrics.md) of each sweep point's records flows, pooled over repetitions; "
    "log x. The y axis is the share of records sent, so a curve ends at the share delivered."
)


def record_latencies_ms(run_dir: Path, flow: str) -> np.ndarray | None:
    s = receiver_records(lambda stem: read_arrow(Path(run_dir) / "raw" / f"{stem}.arrow"), flow)
    return None if s is None else M.record_latencies(s) / 1e6


def records_sent(run_dir: Path, flow: str) -> int:
    m = json.loads((Path(run_dir) / "metrics.json").read_text())
    return int(m["flows"][flow].get("records_sent") or 0)


@registered("record_latency_cdf", "Record latency distribution per sweep point", SWEEP)
def plot_record_latency_cdf(spec: PlotSpec, df: pd.DataFrame, out: Path) -> Plot:
    col = "record_latency_p50_ms"
    if col not in df or df[col].isna().all():
        return spec.not_applicable(CAPTION, "no records flow")
    d = df[~df[col].isna()]
    points = list(dict.fromkeys(d["point"].astype(str)))
    colors = Colors(points)
    fig, ax = figure()
    drawn = 0
    for p in points:
        g = d[d["point"].astype(str) == p]
        lats = [record_latencies_ms(r.run_dir, r.flow) for r in g.itertuples()]
        got = [x for x in lats if x is not None]
        sent = sum(records_sent(r.run_dir, r.flow) for r in g.itertuples())
        if not got or sent <= 0:
            continue
        lat = np.sort(np.concatenate(got))
        lat = lat[lat > 0]
        if not len(lat):
            continue
        y = np.arange(1, len(lat) + 1) / sent
        p50, p99 = np.percentile(lat, [50, 99])
        label = f"{p or 'default'} (p50 {p50:.0f} ms, p99 {p99:.0f} ms)"
        ax.plot(lat, y, color=colors[p], label=label, drawstyle="steps-post")
        drawn += 1
    if not drawn:
        return spec.skip(CAPTION, "no per-record series in the runs")
    ax.set_xscale("log")
    ax.set_xlabel("record latency (ms, log)")
    ax.set_ylabel("fraction of records sent ≤ x")
    ax.set_ylim(0, 1.01)
    return spec.finish(fig, ax, out, CAPTION)


PAGE_CAPTION = (
    "Page time (the primary asked for → the page's last object complete, docs/metrics.md) of every page "
    "each sweep point's page flows completed, pooled over repetitions: box = quartiles, whiskers = 1.5 IQR, "
    "dots = outliers; the number of pages under each box."
)


@registered("page_time_box", "Page time per sweep point", SWEEP)
def plot_page_time_boxes(spec: PlotSpec, df: pd.DataFrame, out: Path) -> Plot:
    if not len(df):
        return spec.not_applicable(PAGE_CAPTION, "no runs")
    points = list(dict.fromkeys(df["point"].astype(str)))
    data: dict[str, np.ndarray] = {}
    for p in points:
        g = df[df["point"].astype(str) == p]
        times = []
        for r in g.itertuples():
            s = read_arrow(Path(r.run_dir) / "raw" / f"{r.flow}-client-page.arrow")
            if s is not None:
                times.append(M.page_times(s) / 1e6)
        if times:
            data[p] = np.concatenate(times)
    if not data:
        return spec.not_applicable(PAGE_CAPTION, "no page flow")
    names = list(data)
    fig, ax = figure()
    colors = Colors(names)
    bp = ax.boxplot([data[n] if len(data[n]) else [np.nan] for n in names], patch_artist=True, widths=0.6,
                    medianprops={"color": "black"})  # fmt: skip
    for patch, n in zip(bp["boxes"], names):
        patch.set_facecolor(colors[n])
        patch.set_alpha(0.55)
    ax.set_xticks(range(1, len(names) + 1))
    ax.set_xticklabels([f"{n or 'default'}\n({len(data[n])} pages)" for n in names], fontsize=8)
    ax.set_ylabel("page time (ms)")
    return spec.finish(fig, ax, out, PAGE_CAPTION, legend_at=None)
