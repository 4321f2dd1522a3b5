"""Run plots of the workloads on records (docs/metrics.md "Plots"): the CDF of VoIP loss
bursts per jitter buffer, bytes handed to the application over time by each records flow
(and, for an unordered receiver, what its socket's stream alone would have handed over
from the same packets), and a box plot of each records flow's record latency."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd

from transportlab import metrics as M
from transportlab.artefacts.rundir import receiver_records
from transportlab.report.figures import RUN, Plot, PlotSpec, registered, spans_decades
from transportlab.report.rundata import RunData
from transportlab.report.style import Colors, figure


def records_series(rd: RunData) -> Iterator[tuple[str, pd.DataFrame]]:
    """Each records flow's non-empty per-record series (its receiver's), by name."""
    for name in rd.flows:
        series = receiver_records(rd.series, name)
        if series is not None and len(series):
            yield name, series


@registered("loss_bursts", "VoIP loss bursts", RUN)
def plot_loss_bursts(spec: PlotSpec, rd: RunData, out: Path, colors: Colors) -> Plot:
    """Empirical CDF of the loss-burst lengths (runs of consecutive frames missing playout) of each flow
    with `playout`, one line per jitter buffer (solid: the first buffer listed, dashed: the next); the
    legend gives the frames missing and the longest burst."""
    caption = spec.caption
    flows = {n: f["voip"] for n, f in rd.flows.items() if f.get("voip")}
    if not flows:
        return spec.not_applicable(caption, "no flow with playout (VoIP frames)")
    fig, ax = figure()
    styles = ["-", "--", ":", "-."]
    for name, v in flows.items():
        for i, (buf, p) in enumerate(v["playout"].items()):
            lengths = np.sort(np.asarray(p["burst_lengths"], dtype=np.float64))
            label = f"{name} {buf}: {p['missed']} of {p['frames']} frames missed, longest burst {p['longest_burst']}"
            if not len(lengths):
                ax.plot([], [], styles[i % 4], color=colors[name], label=label + " (none)")
                continue
            y = np.arange(1, len(lengths) + 1) / len(lengths)
            ax.plot(lengths, y, styles[i % 4], color=colors[name], drawstyle="steps-post", label=label)
    ax.set_xlabel("loss burst (consecutive frames missing playout)")
    ax.set_ylabel("fraction of bursts ≤ x")
    ax.set_xlim(left=0)
    ax.set_ylim(0, 1.01)
    return spec.finish(fig, ax, out, caption)


@registered("delivered_bytes", "Bytes delivered to the application over time", RUN)
def plot_delivered_bytes(spec: PlotSpec, rd: RunData, out: Path, colors: Colors) -> Plot:
    """Bytes of the records each records flow handed to the receiving application by each time (distinct
    records, framing included; `metrics.delivered_over_time`, 100 ms bins). An unordered receiver's dashed
    line is what its socket's stream alone completed from the same packets (an ordered receiver's view)."""
    caption = spec.caption
    drawn = 0
    fig, ax = figure()
    for name, series in records_series(rd):
        d = M.delivered_over_time(series, rd.t0_ns, 0.1)
        ax.step(d["t_s"], d["bytes"] / 1e6, where="post", color=colors[name], label=name)
        if "via" in series and (series["via"] == "packet").any() and "stream_ns" in series:
            s = series.dropna(subset=["stream_ns"])
            s = s.assign(deliver_ns=s["stream_ns"].astype(np.int64))
            d = M.delivered_over_time(s, rd.t0_ns, 0.1)
            ax.step(d["t_s"], d["bytes"] / 1e6, "--", where="post", color=colors[name], label=f"{name} (stream alone)")
        drawn += 1
    if not drawn:
        return spec.not_applicable(caption, "no records flow", fig)
    ax.set_ylabel("delivered (MB)")
    ax.set_ylim(bottom=0)
    return spec.finish(fig, ax, out, caption, rd=rd, legend_at="upper left")


@registered("record_latency_boxes", "Record latency per records flow", RUN)
def plot_record_latency_boxes(spec: PlotSpec, rd: RunData, out: Path, colors: Colors) -> Plot:
    """Box plot of each records flow's per-record latency (deliver − send of each distinct record, the
    receiver's per-record series): median line, box = quartiles, whiskers = 1.5 × IQR, outliers as dots; log
    axis when the values span more than 1.5 decades. One box per session in S2's streaming scenario."""
    caption = spec.caption
    names, data = [], []
    for name, series in records_series(rd):
        names.append(name)
        data.append(M.record_latencies(series) / 1e6)
    if not names:
        return spec.not_applicable(caption, "no records flow")
    fig, ax = figure()
    parts = ax.boxplot(data, patch_artist=True, sym=".")
    for patch, name in zip(parts["boxes"], names):
        patch.set_facecolor(colors[name])
        patch.set_alpha(0.6)
    ax.set_xticks(range(1, len(names) + 1), names)
    ax.set_ylabel("record latency (ms)")
    if spans_decades(np.concatenate(data)):
        ax.set_yscale("log")
    return spec.finish(fig, ax, out, caption, legend_at=None)
