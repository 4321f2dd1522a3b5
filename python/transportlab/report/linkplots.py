"""Link plots of one run: throughput of each leg of a multipath direction over time
(legs are log directions of their own, docs/packet-log.md), the utilisation of each
link direction over time, and a trace-driven direction's capacity beside what left it. Data gathering (`*_data`) and drawing (`draw_*`) are separate,
so the drawing is tested on hand-made inputs."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from transportlab import metrics as M
from transportlab.report.figures import PACKET_LOG, Plot, PlotSpec, registered
from transportlab.report.rundata import RunData
from transportlab.report.style import Colors, figure, legend_below, rate_scale
from transportlab.scenario.traces import TraceError, load_trace

# (time in s from scenario start, value) per series
Series = tuple[np.ndarray, np.ndarray]

# ---- per-leg throughput --------------------------------------------------------------


def leg_caption(bin_s: float) -> str:
    return (
        f"Bits per second leaving each leg of a multipath direction (every packet of every flow, duplicate copies "
        f"included) and leaving the multipath direction itself after the merge, in bins of {bin_s * 1e3:g} ms, "
        f"from the departure records of the engine's packet log at the model's due times (t_ns: a leg hands its "
        f"packets to the merge, not to a host). One panel per multipath direction."
    )


def _bins(rd: RunData) -> int:
    return max(1, int(round(rd.bin_s * 1e9)))


def _direction_bps(rd: RunData, index: int) -> Series:
    assert rd.records is not None
    tp = M.throughput_by_flow(rd.records, index, _bins(rd), origin_ns=rd.t0_ns, end_ns=rd.end_ns)
    return rd.seconds(tp.index.to_numpy(np.int64)), tp.sum(axis=1).to_numpy(np.float64)


def leg_throughput_data(rd: RunData) -> dict[str, dict[str, Series]]:
    """Multipath direction name → {series label: (t_s, bit/s)}: each leg, then the total."""
    if rd.records is None:
        return {}
    out: dict[str, dict[str, Series]] = {}
    for parent, legs in rd.legs.items():
        name = rd.direction_name(parent)
        panel = {f"leg {rd.direction_name(leg).removeprefix(name + '.')}": _direction_bps(rd, leg) for leg in legs}
        panel[f"{name} (after the merge)"] = _direction_bps(rd, parent)
        out[name] = panel
    return out


def rate_panels(
    panels: dict[str, dict[str, Series]], bin_s: float, duration_s: float | None, ylabel: str, title: str, titles, draw
):
    """One panel per entry of `panels`, rates over time on a shared scale: `draw(ax, label,
    x, y, colors)` draws each series as steps (x: bin starts and the last bin's end; y in
    the scale's unit); `ylabel` and `titles(name)` label each panel, `title` the figure."""
    peak = max((float(v.max()) for p in panels.values() for _, v in p.values() if len(v)), default=0.0)
    div, unit = rate_scale(peak)
    fig, axes = figure(len(panels), 1, figsize=(9.0, 3.6 * len(panels)), squeeze=False)
    for ax, (name, series) in zip(axes[:, 0], panels.items()):
        colors = Colors(series)
        for label, (t, v) in series.items():
            if len(t):
                draw(ax, label, np.append(t, t[-1] + bin_s), np.append(v, v[-1]) / div, colors)
        ax.set_ylabel(f"{ylabel} ({unit})")
        ax.set_ylim(bottom=0, top=peak / div * 1.12 if peak > 0 else 1)
        ax.set_xlabel("time since scenario start (s)")
        if duration_s:
            ax.set_xlim(0, duration_s)
        ax.set_title(titles(name))
        legend_below(ax)
    fig.suptitle(title, fontweight="bold")
    fig.tight_layout()
    return fig


def draw_leg_throughput(panels: dict[str, dict[str, Series]], bin_s: float, duration_s: float | None = None):
    """One panel per multipath direction; legs as steps, the merged total dashed."""

    def draw(ax, label, x, y, colors):
        total = label.endswith("(after the merge)")
        ax.step(
            x,
            y,
            where="post",
            color="0.2" if total else colors[label],
            ls="--" if total else "-",
            lw=1.1 if total else 1.4,
            label=label,
        )

    title = plot_leg_throughput.title
    return rate_panels(
        panels, bin_s, duration_s, "throughput", title, lambda name: f"Per-leg throughput of {name}", draw
    )


@registered("leg_throughput", "Per-leg throughput over time", PACKET_LOG)
def plot_leg_throughput(spec: PlotSpec, rd: RunData, out: Path, colors: Colors) -> Plot:
    caption = leg_caption(rd.bin_s)
    if not rd.legs:
        return spec.not_applicable(caption, "the run has no multipath direction")
    fig = draw_leg_throughput(leg_throughput_data(rd), rd.bin_s, rd.duration_s)
    return spec.saved(fig, out, caption)


# ---- utilisation over time -----------------------------------------------------------


def utilisation_caption(bin_s: float) -> str:
    return (
        f"Utilisation of each link direction with a configured rate, per bin of {bin_s * 1e3:g} ms: bits of every "
        f"departure from the direction in the bin (all flows, retransmissions and copies included; the model's "
        f"due times t_ns, as the link-rate checks read them) ÷ (configured rate × bin width). Directions that "
        f"carried nothing are left out."
    )


def utilisation_data(rd: RunData) -> dict[str, Series]:
    """Direction name → (t_s, utilisation fraction) for each direction with a rate that
    carried packets."""
    if rd.records is None:
        return {}
    out: dict[str, Series] = {}
    carried = set(np.unique(np.asarray(rd.records["direction"])).tolist())
    for index, name in sorted(rd.direction_names.items()):
        cap = rd.capacity_bps(index)
        if not cap or index not in carried:
            continue
        u = M.utilisation_over_time(rd.records, index, cap, _bins(rd), origin_ns=rd.t0_ns, end_ns=rd.end_ns)
        if len(u) and float(u.max()) > 0:
            out[name] = (rd.seconds(u.index.to_numpy(np.int64)), u.to_numpy(np.float64))
    return out


def draw_utilisation(data: dict[str, Series], bin_s: float, duration_s: float | None = None):
    colors = Colors(data)
    fig, ax = figure()
    for name, (t, u) in data.items():
        ax.step(np.append(t, t[-1] + bin_s), np.append(u, u[-1]) * 100, where="post", color=colors[name], label=name)
    ax.axhline(100, color="0.35", ls="--", lw=1)
    top = max([float(u.max()) for _, u in data.values()] + [1.0])
    ax.set_ylim(0, top * 100 * 1.08)
    ax.set_ylabel("utilisation (% of configured rate)")
    ax.set_xlabel("time since scenario start (s)")
    if duration_s:
        ax.set_xlim(0, duration_s)
    ax.set_title(plot_utilisation.title)
    legend_below(ax)
    return fig


@registered("utilisation", "Link utilisation over time", PACKET_LOG)
def plot_utilisation(spec: PlotSpec, rd: RunData, out: Path, colors: Colors) -> Plot:
    caption = utilisation_caption(rd.bin_s)
    data = utilisation_data(rd)
    if not data:
        return spec.skip(caption, "no direction with a configured rate carried packets")
    fig = draw_utilisation(data, rd.bin_s, rd.duration_s)
    return spec.saved(fig, out, caption)


# ---- a trace's capacity beside what left the link --------------------------------------

# Bytes one trace opportunity delivers (Mahimahi's; linkem's `OPPORTUNITY_BYTES`).
OPPORTUNITY_BYTES = 1500


def trace_opportunities_ns(trace_ms, offset_ns: int, duration_ns: int) -> np.ndarray:
    """Scenario times (ns) of a trace's delivery opportunities in [0, duration): trace time
    0 is the scenario's time 0, where the trace stands at `offset_ns` (modulo its period,
    which is its last timestamp); the trace repeats. Integer ns, as the link model counts."""
    ms = np.asarray(trace_ms, dtype=np.int64) * 1_000_000
    period = int(ms[-1])
    phase = offset_ns % period
    cycles = (duration_ns + phase) // period + 1
    t = np.concatenate([ms + k * period for k in range(cycles + 1)]) - phase
    return t[(t >= 0) & (t < duration_ns)]


def trace_capacity_caption(bin_s: float) -> str:
    return (
        f"For each trace-driven link direction, per bin of {bin_s * 1e3:g} ms: the capacity the trace offers "
        f"(its delivery opportunities in the bin × {OPPORTUNITY_BYTES} bytes, from the trace file with trace time "
        f"0 at the scenario's time 0, shifted by the direction's trace_offset) and the bits of every departure "
        f"from the direction (all flows; the model's due times t_ns). Opportunities no packet was waiting for are "
        f"wasted, so the departures stay at or below the capacity bin by bin, up to a packet spanning a bin edge."
    )


def trace_capacity_data(rd: RunData) -> tuple[dict[str, dict[str, Series]], list[str]]:
    """Trace-driven direction name → {"trace capacity": (t_s, bit/s), "departed": (t_s,
    bit/s)}, and the reasons directions were left out (a trace file no longer readable)."""
    if rd.records is None or rd.duration_s is None:
        return {}, []
    out: dict[str, dict[str, Series]] = {}
    problems: list[str] = []
    bin_ns = _bins(rd)
    bin_s = bin_ns / 1e9
    for index, name in sorted(rd.direction_names.items()):
        spec = rd.link_spec(index)
        if not spec.get("trace"):
            continue
        try:
            trace_ms = load_trace(spec["trace"])
        except TraceError as e:
            problems.append(f"{name}: {e}")
            continue
        duration_ns = int(round(rd.duration_s * 1e9))
        offset_ns = int(round(float(spec.get("trace_offset") or 0.0) * 1e9))
        opportunities = trace_opportunities_ns(trace_ms, offset_ns, duration_ns)
        bins = -(-duration_ns // bin_ns)
        counts = np.bincount(opportunities // bin_ns, minlength=bins)
        capacity = counts * OPPORTUNITY_BYTES * 8 / bin_s
        starts = np.arange(bins) * bin_s
        out[name] = {"trace capacity": (starts, capacity.astype(np.float64)), "departed": _direction_bps(rd, index)}
    return out, problems


def draw_trace_capacity(panels: dict[str, dict[str, Series]], bin_s: float, duration_s: float | None = None):
    """One panel per trace-driven direction: the capacity as a filled step, departures over it."""

    def draw(ax, label, x, y, colors):
        if label == "trace capacity":
            ax.fill_between(x, y, step="post", color="0.85", label=label)
        else:
            ax.step(x, y, where="post", color="C0", lw=1.3, label=label)

    title = plot_trace_capacity.title
    return rate_panels(
        panels, bin_s, duration_s, "rate", title, lambda name: f"Trace capacity and departures of {name}", draw
    )


@registered("trace_capacity", "Trace capacity and departures over time", PACKET_LOG)
def plot_trace_capacity(spec: PlotSpec, rd: RunData, out: Path, colors: Colors) -> Plot:
    caption = trace_capacity_caption(rd.bin_s)
    if not any(rd.link_spec(i).get("trace") for i in rd.direction_names):
        return spec.not_applicable(caption, "the run has no trace-driven link direction")
    panels, problems = trace_capacity_data(rd)
    if not panels:
        return spec.skip(caption, "; ".join(problems) or "no trace-driven direction to draw")
    fig = draw_trace_capacity(panels, rd.bin_s, rd.duration_s)
    return spec.saved(fig, out, caption)


__all__ = [
    "plot_leg_throughput",
    "plot_trace_capacity",
    "plot_utilisation",
    "draw_leg_throughput",
    "draw_trace_capacity",
    "draw_utilisation",
]
