"""Distribution plots of one run: the histogram of packet inter-arrival times at the
receiver (constant-interval senders and jittered paths, S0 E0 jitter) and the CDF of
each flow's RTT samples. Each plot is data gathering (`*_data`, from a `RunData`) plus
drawing (`draw_*`, from plain arrays), so the drawing is tested on hand-made inputs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from transportlab import metrics as M
from transportlab.artefacts.packetlog import DEPARTURE, actual_time
from transportlab.report.figures import RUN, Plot, PlotSpec, registered, spans_decades
from transportlab.report.rundata import RunData
from transportlab.report.style import Colors, figure, legend

MAX_BINS = 100

# ---- inter-arrival histogram ------------------------------------------------------------

INTERARRIVAL_CAPTION = (
    "Histogram of the time between consecutive packets of each flow reaching its receiver: the real hand-over "
    "times (t_actual_ns) of the flow's departures from the last link direction of its path in the engine's packet "
    "log, or, where a run has no packet log, the UDP receiver's own receive times (recv_ns of udp-recv; the legend "
    "says which). Drawn for UDP flows and flows crossing a direction with jitter; legend: mean, standard deviation, "
    "min and max of the inter-arrival times."
)


def _jittered(rd: RunData, path: list[int]) -> bool:
    return any((rd.link_spec(int(i)).get("jitter") or 0) > 0 for i in path)


def interarrival_flows(rd: RunData) -> list[str]:
    """The flows the histogram is for: UDP flows and flows crossing a jittered direction."""
    return [
        name
        for name, f in rd.flows.items()
        if (f.get("protocol") or "").lower() == "udp" or _jittered(rd, [int(i) for i in f.get("path") or []])
    ]


def interarrival_data(rd: RunData) -> dict[str, tuple[np.ndarray, str]]:
    """Flow name → (inter-arrival times in ms, source) for `interarrival_flows`."""
    out: dict[str, tuple[np.ndarray, str]] = {}
    for name in interarrival_flows(rd):
        f = rd.flows[name]
        path = [int(i) for i in f.get("path") or []]
        times = None
        if rd.records is not None and path:
            concrete = rd.log_flows(name)
            if concrete:
                rec = rd.records
                mask = (np.asarray(rec["event"]) == DEPARTURE) & (np.asarray(rec["direction"]) == path[-1])
                fm = np.zeros(len(rec), dtype=bool)
                for c in concrete:
                    fm |= M.flow_mask(rec, c)
                times, source = actual_time(rec[mask & fm]), "packet log"
        if times is None and (f.get("protocol") or "").lower() == "udp":
            s = rd.series(f"{name}-server")
            if s is not None and "recv_ns" in s:
                times = pd.to_numeric(s["recv_ns"], errors="coerce").dropna().to_numpy(np.int64)
                source = "UDP receiver"
        if times is not None and len(times) > 1:
            out[name] = (M.interarrival(times) / 1e6, source)
    return out


def draw_interarrival(data: dict[str, tuple[np.ndarray, str]], colors: Colors | None = None):
    """One step histogram per flow over shared bins (at most MAX_BINS)."""
    colors = colors or Colors(data)
    allv = np.concatenate([v for v, _ in data.values()])
    edges = np.histogram_bin_edges(allv, bins="auto")
    if len(edges) - 1 > MAX_BINS:
        edges = np.linspace(allv.min(), allv.max(), MAX_BINS + 1)
    if len(edges) < 2 or edges[0] == edges[-1]:  # every gap equal: one bin around it
        edges = np.array([allv.min() - 0.01, allv.max() + 0.01])
    fig, ax = figure()
    for name, (v, source) in data.items():
        label = (
            f"{name} ({source}): mean {v.mean():.3f} ms, std {v.std(ddof=1) if len(v) > 1 else 0:.3f} ms, "
            f"min {v.min():.3f}, max {v.max():.3f} ms, n={len(v)}"
        )
        ax.hist(v, bins=edges, histtype="step", lw=1.4, color=colors[name], label=label)
    ax.set_xlabel("inter-arrival time (ms)")
    ax.set_ylabel("packets")
    ax.set_title(plot_interarrival.title)
    legend(ax, loc="upper right")
    return fig


@registered("interarrival", "Inter-arrival times at the receiver", RUN)
def plot_interarrival(spec: PlotSpec, rd: RunData, out: Path, colors: Colors) -> Plot:
    if not interarrival_flows(rd):
        return spec.not_applicable(INTERARRIVAL_CAPTION, "no UDP flow and no flow across a jittered direction")
    data = interarrival_data(rd)
    if not data:
        return spec.skip(INTERARRIVAL_CAPTION, "no packet log and no UDP receiver series with two packets")
    return spec.saved(draw_interarrival(data, colors), out, INTERARRIVAL_CAPTION)


# ---- RTT CDF -------------------------------------------------------------------------

RTT_CDF_CAPTION = (
    "Empirical CDF of each flow's RTT samples: the smoothed RTT (srtt) its sender reports every 10 ms "
    "(TCP_INFO, or QUIC path statistics), and each probe's echo RTTs (lost probes excluded). The RTT axis is "
    "logarithmic when the samples span more than 1.5 decades."
)


def rtt_cdf_data(rd: RunData) -> dict[str, np.ndarray]:
    """Series label → RTT samples in ms (flows' srtt, probes' echo RTTs)."""
    out: dict[str, np.ndarray] = {}
    for name in rd.flows:
        df, side = rd.sender_series(name)
        if df is None or "srtt_us" not in df:
            continue
        v = pd.to_numeric(df["srtt_us"], errors="coerce").to_numpy(np.float64, na_value=np.nan) / 1e3
        v = v[np.isfinite(v) & (v > 0)]
        if len(v):
            out[f"{name} srtt ({side})"] = v
    for name in rd.probes:
        df = rd.series(name)
        if df is None or "rtt_ns" not in df:
            continue
        v = pd.to_numeric(df["rtt_ns"], errors="coerce").to_numpy(np.float64, na_value=np.nan) / 1e6
        v = v[np.isfinite(v) & (v >= 0)]
        if len(v):
            out[f"probe {name}"] = v
    return out


def draw_rtt_cdf(data: dict[str, np.ndarray], colors: Colors | None = None):
    colors = colors or Colors(data)
    fig, ax = figure()
    for label, v in data.items():
        v = np.sort(v)
        y = np.arange(1, len(v) + 1) / len(v)
        p50, p95 = np.percentile(v, [50, 95])
        ax.plot(v, y, drawstyle="steps-post", color=colors[label], label=f"{label} (p50 {p50:.3g}, p95 {p95:.3g} ms)")
    if spans_decades(np.concatenate(list(data.values()))):
        ax.set_xscale("log")
    ax.set_xlabel("RTT (ms)")
    ax.set_ylabel("fraction of samples ≤ x")
    ax.set_ylim(0, 1.01)
    ax.set_title(plot_rtt_cdf.title)
    legend(ax, loc="lower right")
    return fig


@registered("rtt_cdf", "RTT distribution", RUN)
def plot_rtt_cdf(spec: PlotSpec, rd: RunData, out: Path, colors: Colors) -> Plot:
    data = rtt_cdf_data(rd)
    if not data:
        return spec.skip(RTT_CDF_CAPTION, "no sender series with srtt and no probe series")
    # A flow's srtt keeps the flow's colour; a probe its probe colour.
    named = Colors()
    for label in data:
        base = label.split(" srtt")[0] if " srtt" in label else f"probe:{label[len('probe ') :]}"
        named.assign(label, colors[base])
    return spec.saved(draw_rtt_cdf(data, named), out, RTT_CDF_CAPTION)


__all__ = [
    "plot_interarrival",
    "plot_rtt_cdf",
    "draw_interarrival",
    "draw_rtt_cdf",
    "interarrival_data",
    "rtt_cdf_data",
]
