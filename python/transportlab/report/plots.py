"""Plots of one run and of a sweep, as PNG files.

Per run (`run_plots`): throughput over time, queueing delay over time, RTT over time,
one-way delay CDF, cwnd over time, RTT CDF and inter-arrival histogram
(`report.distributions`), per-leg throughput and utilisation over time
(`report.linkplots`). Per sweep (`sweep_plots`): each metric against the swept value
(median with min–max bars over repetitions), box plots of every metric across
repetitions, Pantheon's throughput–delay plot (`report.pantheon`), the record-latency
CDF and the page-time box plot per sweep point (`report.records`). Each function
returns `Plot` records; a plot whose data is absent is returned with `path=None` and the
reason in `skipped`, never an exception.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd

from transportlab import metrics as M
from transportlab.artefacts.metric_registry import BY_NAME, PLOTTED, Metric
from transportlab.report.distributions import plot_interarrival, plot_rtt_cdf
from transportlab.report.figures import (
    PACKET_LOG,
    RUN,
    SWEEP,
    Plot,
    PlotFunction,
    PlotSpec,
    registered,
    safe,
    spans_decades,
)
from transportlab.report.linkplots import plot_leg_throughput, plot_trace_capacity, plot_utilisation
from transportlab.report.pantheon import plot_pantheon
from transportlab.report.records import plot_page_time_boxes, plot_record_latency_cdf
from transportlab.report.rundata import RunData
from transportlab.report.style import Colors, figure, legend_below, rate_scale
from transportlab.report.table import parse_value
from transportlab.report.workloadplots import plot_delivered_bytes, plot_loss_bursts, plot_record_latency_boxes

# ---- per run ------------------------------------------------------------------------


def flow_throughput(rd: RunData, name: str, bin_ns: int) -> tuple[np.ndarray, np.ndarray]:
    """(bin start ns, bit/s) of the flow's data packets leaving the last direction of its
    path (`metrics.throughput_by_flow`); empty arrays without a path or log packets."""
    f = rd.flows.get(name) or {}
    path = f.get("path") or ([f["bottleneck"]] if f.get("bottleneck") is not None else [])
    concrete = rd.log_flows(name)
    if rd.records is None or not path or not concrete:
        return np.zeros(0, np.int64), np.zeros(0)
    tp = M.throughput_by_flow(
        rd.records, int(path[-1]), bin_ns, origin_ns=rd.t0_ns, end_ns=rd.end_ns, flows={str(c): c for c in concrete}
    )
    return tp.index.to_numpy(np.int64), tp.sum(axis=1).to_numpy(np.float64)


@registered("throughput", "Throughput over time", PACKET_LOG)
def plot_throughput(spec: PlotSpec, rd: RunData, out: Path, colors: Colors) -> Plot:
    bin_s = rd.bin_s
    caption = (
        f"Bits per second of each flow's data packets leaving the last link direction of its path "
        f"(engine packet log, IP bytes incl. retransmissions), in bins of {bin_s * 1e3:g} ms. "
        f"Dashed lines: configured capacity of each flow's bottleneck direction."
    )
    if not rd.flows:
        return spec.skip(caption, "the run has no flows")
    bin_ns = max(1, int(round(bin_s * 1e9)))
    curves, caps = {}, {}
    for name, f in rd.flows.items():
        path = f.get("path") or ([f["bottleneck"]] if f.get("bottleneck") is not None else [])
        concrete = rd.log_flows(name)
        if not path or not concrete:
            continue
        curves[name] = flow_throughput(rd, name, bin_ns)
        if f.get("bottleneck") is not None:
            b = int(f["bottleneck"])
            cap = rd.capacity_bps(b)
            if cap:
                caps[b] = cap
    if not curves:
        return spec.skip(caption, "no flow's packets were found in the packet log")
    peak = max([float(v.max()) for _, v in curves.values() if len(v)] + list(caps.values()) + [0.0])
    div, unit = rate_scale(peak)
    fig, ax = figure()
    for name, (t, v) in curves.items():
        if not len(t):
            continue
        x = np.append(rd.seconds(t), rd.seconds(t[-1] + bin_ns))
        ax.step(x, np.append(v, v[-1]) / div, where="post", color=colors[name], label=name)
    for b, cap in caps.items():
        ax.axhline(cap / div, color="0.35", ls="--", lw=1, label=f"capacity of {rd.direction_name(b)}")
    ax.set_ylabel(f"throughput ({unit})")
    ax.set_ylim(bottom=0, top=peak / div * 1.12 if peak > 0 else 1)
    return spec.finish(fig, ax, out, caption, rd=rd)


def flow_queueing(rd: RunData, name: str, f: dict) -> tuple[pd.DataFrame | None, str]:
    b = f.get("bottleneck")
    concrete = rd.log_flows(name)
    if b is None or not concrete:
        return None, ""
    b = int(b)
    spec = rd.link_spec(b)
    rate = None if spec.get("trace") else rd.capacity_bps(b)
    fixed = rd.fixed_delay_s(b) * 1e9
    parts = [M.queueing_delay(rd.records, b, c, rate_bps=rate, fixed_delay_ns=fixed) for c in concrete]
    how = "configured rate and delay" if rate else "smallest sojourn per packet size"
    return pd.concat(parts, ignore_index=True).sort_values("departure_ns"), how


@registered("queueing_delay", "Queueing delay at the bottleneck", PACKET_LOG)
def plot_queueing_delay(spec: PlotSpec, rd: RunData, out: Path, colors: Colors) -> Plot:
    """Per-packet queueing delay of each flow's data packets at its bottleneck link direction, plotted at
    the packet's departure time: sojourn (departure − arrival in the engine log) minus the minimum possible
    sojourn (serialisation at the configured rate + configured delay; for trace-driven links the smallest
    sojourn seen per packet size). Includes jitter draws if the link has jitter."""
    caption = spec.caption
    data = {}
    for name, f in rd.flows.items():
        q, how = flow_queueing(rd, name, f)
        if q is not None and len(q):
            data[name] = (q, int(f["bottleneck"]), how)
    if not data:
        return spec.skip(caption, "no flow with a bottleneck direction and packets in the log")
    fig, ax = figure()
    many = sum(len(q) for q, _, _ in data.values()) > 20000
    for name, (q, b, _how) in data.items():
        ax.plot(
            rd.seconds(q["departure_ns"].to_numpy()),
            q["queueing_ns"].to_numpy() / 1e6,
            color=colors[name],
            lw=0.6 if many else 1.0,
            alpha=0.8,
            label=f"{name} @ {rd.direction_name(b)}",
            rasterized=many,
        )
    ax.set_ylabel("queueing delay (ms)")
    ax.set_ylim(bottom=min(0.0, ax.get_ylim()[0]))
    return spec.finish(fig, ax, out, caption, rd=rd)


def by_connection(series: pd.DataFrame) -> Iterator[tuple[str, pd.DataFrame]]:
    """A sender series' samples in time order, one part per connection when it has several:
    (" conn <n>" to add to the line's label, or "" for a series of one connection; the part)."""
    if "conn" in series and series["conn"].nunique() > 1:
        for conn, part in series.groupby("conn"):
            yield f" conn {conn}", part.sort_values("t_ns")
    else:
        yield "", series.sort_values("t_ns")


@registered("rtt", "Round-trip time over time", RUN)
def plot_rtt(spec: PlotSpec, rd: RunData, out: Path, colors: Colors) -> Plot:
    """RTT of each probe (answered probes at their send time; lost probes marked × on the time axis) and the
    smoothed RTT (srtt) the sender reports (TCP_INFO, or QUIC path statistics). The RTT axis is logarithmic
    when the values span more than 1.5 decades."""
    caption = spec.caption
    fig, ax = figure()
    drawn = 0
    for name in rd.probes:
        df = rd.series(name)
        if df is None or not len(df) or "send_ns" not in df or "rtt_ns" not in df:
            continue
        rtt = pd.to_numeric(df["rtt_ns"], errors="coerce").to_numpy(np.float64, na_value=np.nan)
        send = pd.to_numeric(df["send_ns"], errors="coerce").to_numpy(np.float64, na_value=np.nan)
        ok = ~np.isnan(rtt) & (rtt >= 0)
        t = rd.seconds(df["send_ns"].to_numpy(np.int64)) if df["send_ns"].dtype.kind in "iu" else rd.seconds(send)
        lost = int((~ok).sum())
        label = f"probe {name}" + (f" ({lost} lost)" if lost else "")
        ax.plot(t[ok], rtt[ok] / 1e6, color=colors[f"probe:{name}"], lw=0.9, label=label)
        if lost:
            ax.plot(t[~ok], np.zeros(lost), "x", color=colors[f"probe:{name}"], ms=4, clip_on=False)
        drawn += 1
    for name in rd.flows:
        df, side = rd.sender_series(name)
        if df is None or "srtt_us" not in df:
            continue
        for conn, g in by_connection(df):
            srtt = pd.to_numeric(g["srtt_us"], errors="coerce").to_numpy(np.float64, na_value=np.nan)
            keep = srtt > 0
            label = f"{name} srtt ({side}){conn}"
            ax.plot(rd.seconds(g["t_ns"].to_numpy())[keep], srtt[keep] / 1e3, color=colors[name], lw=1.2, label=label)
            drawn += 1
    if not drawn:
        return spec.skip(caption, "no probe series and no TCP_INFO series with srtt", fig)
    ax.set_ylabel("RTT (ms)")
    if spans_decades([y for line in ax.get_lines() for y in line.get_ydata()]):
        ax.set_yscale("log")
    else:
        ax.set_ylim(bottom=0)
    return spec.finish(fig, ax, out, caption, rd=rd)


@registered("delay_cdf", "One-way delay distribution", PACKET_LOG)
def plot_delay_cdf(spec: PlotSpec, rd: RunData, out: Path, colors: Colors) -> Plot:
    """Empirical CDF of each flow's per-packet one-way delay across its path (departure from the last link
    direction − arrival at the first, engine log); dropped packets excluded."""
    caption = spec.caption
    fig, ax = figure()
    drawn = 0
    for name, f in rd.flows.items():
        path = f.get("path")
        concrete = rd.log_flows(name)
        if not concrete:
            continue
        d = (
            np.concatenate(
                [M.one_way_delay(rd.records, c, path or None)["delay_ns"].to_numpy(np.float64) for c in concrete]
            )
            / 1e6
        )
        if not len(d):
            continue
        d.sort()
        y = np.arange(1, len(d) + 1) / len(d)
        p50, p99 = np.percentile(d, [50, 99])
        ax.plot(d, y, color=colors[name], label=f"{name} (p50 {p50:.2f} ms, p99 {p99:.2f} ms)", drawstyle="steps-post")
        drawn += 1
    if not drawn:
        return spec.skip(caption, "no flow's packets crossed their path in the packet log", fig)
    ax.set_xlabel("one-way delay (ms)")
    ax.set_ylabel("fraction of packets ≤ x")
    ax.set_ylim(0, 1.01)
    return spec.finish(fig, ax, out, caption, legend_at="upper left")


@registered("cwnd", "Congestion window over time", RUN)
def plot_cwnd(spec: PlotSpec, rd: RunData, out: Path, colors: Colors) -> Plot:
    """Congestion window of each flow's sender: TCP cwnd × MSS from TCP_INFO samples, QUIC cwnd from the
    connection's path statistics."""
    caption = spec.caption
    fig, ax = figure()
    drawn = 0
    for name in rd.flows:
        df, side = rd.sender_series(name)
        if df is None:
            continue
        if "cwnd_bytes" in df:
            cw = pd.to_numeric(df["cwnd_bytes"], errors="coerce")
        elif "cwnd" in df and "snd_mss" in df:
            cw = pd.to_numeric(df["cwnd"], errors="coerce") * pd.to_numeric(df["snd_mss"], errors="coerce")
        else:
            continue
        df = df.assign(_cw=cw.to_numpy(np.float64, na_value=np.nan))
        for conn, g in by_connection(df):
            label = f"{name} ({side}){conn}"
            ax.step(
                rd.seconds(g["t_ns"].to_numpy()),
                g["_cw"].to_numpy() / 1e3,
                where="post",
                color=colors[name],
                label=label,
            )
            drawn += 1
    if not drawn:
        return spec.skip(caption, "no sender series (raw/<flow>-client.arrow / -server.arrow)", fig)
    ax.set_ylabel("cwnd (kB)")
    ax.set_ylim(bottom=0)
    return spec.finish(fig, ax, out, caption, rd=rd)


# The run report's plots, in the report's order.
RUN_PLOTS: list[PlotFunction] = [
    plot_throughput,
    plot_queueing_delay,
    plot_rtt,
    plot_delay_cdf,
    plot_cwnd,
    plot_rtt_cdf,
    plot_interarrival,
    plot_leg_throughput,
    plot_utilisation,
    plot_trace_capacity,
    plot_loss_bursts,
    plot_delivered_bytes,
    plot_record_latency_boxes,
]


def run_plots(rd: RunData, out: Path | None = None) -> list[Plot]:
    """Writes the run's plots into `out` (default <run_dir>/plots) and returns them."""
    out = Path(out) if out is not None else rd.dir / "plots"
    out.mkdir(parents=True, exist_ok=True)
    colors = Colors(list(rd.flows) + [f"probe:{p}" for p in rd.probes])
    return [safe(plot, rd, out, colors) for plot in RUN_PLOTS]


# ---- per sweep ----------------------------------------------------------------------

# The sweep plots' metrics: the metric registry's plotted ones, in its order.
SWEEP_METRICS = PLOTTED


def x_axis(df: pd.DataFrame, swept: list[str]) -> tuple[str | None, dict, bool, list[str]]:
    """Chooses the x axis of a sweep plot: the first swept path whose values are all
    numeric (or else the first path, or the point label when nothing is swept). Returns
    (path or None, {value-as-text: x position}, numeric?, other paths that split lines)."""
    if not swept:
        labels = list(dict.fromkeys(df["point"].astype(str)))
        return None, {l: i for i, l in enumerate(labels)}, False, []
    parsed = {}
    for p in swept:
        vals = list(dict.fromkeys(df[p].map(_fmt)))
        raw = {_fmt(v): v for v in df[p]}
        conv = [parse_value(df, p, raw[v]) for v in vals]
        if all(c is not None for c in conv) and len({c[1] for c in conv}) == 1:
            parsed[p] = {v: c[0] for v, c in zip(vals, conv)}
    path = next((p for p in swept if p in parsed), swept[0])
    if path in parsed:
        pos, numeric = parsed[path], True
    else:
        pos, numeric = {v: i for i, v in enumerate(dict.fromkeys(df[path].map(_fmt)))}, False
    others = [
        p
        for p in swept
        if p != path and df.groupby(df[path].map(_fmt))[p].agg(lambda s: s.map(_fmt).nunique()).max() > 1
    ]
    return path, pos, numeric, others


def _fmt(v) -> str:
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def _line_key(row, others: list[str]) -> str:
    extra = ",".join(f"{p.rsplit('.', 1)[-1]}={_fmt(row[p])}" for p in others)
    return f"{row['flow']}" + (f" [{extra}]" if extra else "")


def y_scale(values: pd.Series, scale, ylabel: str) -> tuple[float, str]:
    """(divisor, axis label) of a sweep plot's metric values: for `scale` "rate" a rate unit
    fit to the largest value, named in the label; otherwise `scale` is the divisor."""
    if scale == "rate":
        div, unit = rate_scale(float(values.abs().max()))
        return div, f"{ylabel} ({unit})"
    return scale, ylabel


def sweep_metric_plot(m: Metric) -> PlotFunction:
    """The plot of metric `m` against the swept value (titled as the registry says)."""
    return PlotFunction(f"sweep_{m.name}", m.plot_title or m.label, SWEEP, "", plot_sweep_metric)


def sweep_boxes_plot(m: Metric) -> PlotFunction:
    """The box plot of metric `m` across repetitions."""
    return PlotFunction(f"box_{m.name}", f"{m.plot_title or m.label} (box plot)", SWEEP, "", plot_sweep_boxes)


def plot_sweep_metric(
    spec: PlotSpec,
    df: pd.DataFrame,
    swept: list[str],
    col: str,
    ylabel: str,
    scale,
    out: Path,
    probes: pd.DataFrame | None = None,
) -> Plot:
    title = spec.title
    caption = (
        f"{title} of each flow at each sweep point: marker = median over repetitions, bar = min … max over repetitions."
    )
    if BY_NAME[col].source == "run":  # one value per run, repeated on each of its flows
        d = df.drop_duplicates("run_dir").assign(flow="all flows")
        caption = f"{title} over all flows of a run: median over repetitions, bar = min … max."
    else:
        d = df
    if col not in d or d[col].isna().all():
        return spec.not_applicable(caption, f"no run has a value for {col}")
    if col == "rtt_mean_ms" and probes is not None and len(probes) and "rtt_mean_ms" in probes:
        d = pd.concat([d, probes.assign(flow="probe " + probes["probe"].astype(str))], ignore_index=True)
        caption += " Probe lines: mean probe RTT."
    path, pos, numeric, others = x_axis(d, swept)
    xcol = d[path].map(_fmt) if path else d["point"].astype(str)
    d = d.assign(_x=xcol.map(pos), _line=d.apply(lambda r: _line_key(r, others), axis=1))
    d = d[~d[col].isna()]
    div, ylabel = y_scale(d[col], scale, ylabel)
    lines = list(dict.fromkeys(d["_line"]))
    colors = Colors(lines)
    fig, ax = figure()
    log = numeric and min(pos.values()) > 0 and max(pos.values()) / min(pos.values()) >= 50
    n = len(lines)
    for i, line in enumerate(lines):
        g = d[d["_line"] == line].groupby("_x")[col].agg(["min", "median", "max"]).sort_index()
        x = g.index.to_numpy(np.float64)
        if not numeric and n > 1:
            x = x + (i - (n - 1) / 2) * min(0.25, 0.6 / n)
        elif numeric and n > 1:
            x = x * (1 + (i - (n - 1) / 2) * 0.015) if log else x
        med, lo, hi = g["median"] / div, g["min"] / div, g["max"] / div
        ax.errorbar(
            x, med, yerr=[med - lo, hi - med], marker="o", ms=5, capsize=3, color=colors[line], label=line, lw=1.3
        )
    if log:
        ax.set_xscale("log")
    if not numeric:
        ax.set_xlim(-0.5, len(pos) - 0.5)
    ticks = sorted(pos.items(), key=lambda kv: kv[1])
    ax.set_xticks([p for _, p in ticks])
    ax.set_xticklabels(
        [l or "default" for l, _ in ticks],
        rotation=30 if len(ticks) > 5 or any(len(l) > 10 for l, _ in ticks) else 0,
        ha="right" if len(ticks) > 5 else "center",
    )
    ax.minorticks_off()
    ax.set_xlabel(path if path else "sweep point")
    ax.set_ylabel(ylabel)
    if BY_NAME[col].log_when_spread and spans_decades(d[col] / div):
        ax.set_yscale("log")
    elif col != "jain_index":
        ax.set_ylim(bottom=min(0.0, ax.get_ylim()[0]))
    else:
        ax.set_ylim(0, 1.05)
    ax.set_title(f"{title} vs {path.rsplit('.', 1)[-1] if path else 'sweep point'}")
    legend_below(ax)
    return spec.saved(fig, out, caption)


def plot_sweep_boxes(spec: PlotSpec, df: pd.DataFrame, col: str, title: str, ylabel: str, scale, out: Path) -> Plot:
    """`title`: the metric's (the figure reads "<title> across repetitions")."""
    caption = f"{title} across repetitions: one panel per flow, one box per sweep point (box = quartiles, whiskers = 1.5 IQR, dots = outliers)."
    if col not in df or df[col].isna().all():
        return spec.not_applicable(caption, f"no run has a value for {col}")
    if BY_NAME[col].source == "run":  # one value per run, repeated on each of its flows
        df = df.drop_duplicates("run_dir").assign(flow="all flows")
    d = df[~df[col].isna()]
    reps = d.groupby(["point", "flow"], dropna=False)[col].size()
    if reps.max() < 2:
        return spec.skip(caption, "one repetition per point: nothing to spread")
    div, ylabel = y_scale(d[col], scale, ylabel)
    flows = list(dict.fromkeys(d["flow"]))
    points = list(dict.fromkeys(df["point"].astype(str)))
    ncols = min(3, len(flows))
    nrows = math.ceil(len(flows) / ncols)
    w = max(4.0, min(14.0, 0.6 * len(points) * ncols + 2))
    fig, axes = figure(nrows, ncols, figsize=(max(9.0, w), 3.6 * nrows), squeeze=False)
    colors = Colors(flows)
    for k, flow in enumerate(flows):
        ax = axes[k // ncols][k % ncols]
        g = d[d["flow"] == flow]
        data = [(g[g["point"].astype(str) == p][col] / div).to_numpy() for p in points]
        bp = ax.boxplot(
            [x if len(x) else [np.nan] for x in data], patch_artist=True, widths=0.6, medianprops={"color": "black"}
        )
        for patch in bp["boxes"]:
            patch.set_facecolor(colors[flow])
            patch.set_alpha(0.55)
        ax.set_xticks(range(1, len(points) + 1))
        ax.set_xticklabels(
            [p or "default" for p in points],
            rotation=30 if len(points) > 3 else 0,
            ha="right" if len(points) > 3 else "center",
            fontsize=8,
        )
        ax.set_title(flow, fontsize=10)
        ax.set_ylabel(ylabel)
        if BY_NAME[col].log_when_spread and spans_decades(d[col] / div):
            ax.set_yscale("log")
    for k in range(len(flows), nrows * ncols):
        axes[k // ncols][k % ncols].set_visible(False)
    fig.suptitle(f"{title} across repetitions", fontweight="bold")
    fig.tight_layout()
    return spec.saved(fig, out, caption)


def pantheon_layout(df: pd.DataFrame, swept: list[str]) -> tuple[list[str], list[str]]:
    """(scheme columns, panel columns) of a sweep's Pantheon plot: with both numeric and
    non-numeric swept paths, the numeric ones (rates, delays: the network condition) make
    the panels and the others (protocol, cc) the schemes; otherwise one panel with one
    scheme per sweep point. The flow is part of the scheme when a run has several."""
    numeric = [p for p in swept if all(parse_value(df, p, v) is not None for v in df[p])]
    other = [p for p in swept if p not in numeric]
    flow = ["flow"] if df["flow"].nunique() > 1 else []
    if numeric and other:
        return other + flow, numeric
    return ["point"] + flow, []


def sweep_plots(df: pd.DataFrame, swept: list[str], out: Path, probes: pd.DataFrame | None = None) -> list[Plot]:
    """Every metric against the swept value, a box plot of every metric across
    repetitions, and Pantheon's throughput–delay plot."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    plots = [
        safe(sweep_metric_plot(m), df, swept, m.name, m.axis or m.label, m.scale, out, probes) for m in SWEEP_METRICS
    ]
    for m in SWEEP_METRICS:
        title = m.plot_title or m.label
        plots.append(safe(sweep_boxes_plot(m), df, m.name, title, m.axis or m.label, m.scale, out))
    plots.append(safe(plot_record_latency_cdf, df, out))
    plots.append(safe(plot_page_time_boxes, df, out))
    if len(df):
        schemes, panels = pantheon_layout(df, swept)
        plots.append(safe(plot_pantheon, df, schemes, panels, out))
    return plots
