"""Link plots of one run: throughput of each leg of a multipath direction over time
(legs are log directions of their own, docs/packet-log.md) and the utilisation of each
link direction over time. Data gathering (`*_data`) and drawing (`draw_*`) are separate,
so the drawing is tested on hand-made inputs."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from transportlab import metrics as M
from transportlab.report.figures import Plot, not_applicable, skip
from transportlab.report.rundata import RunData
from transportlab.report.style import Colors, figure, legend_below, rate_scale, save

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


def draw_leg_throughput(panels: dict[str, dict[str, Series]], bin_s: float, duration_s: float | None = None):
    """One panel per multipath direction; legs as steps, the merged total dashed."""
    peak = max((float(v.max()) for p in panels.values() for _, v in p.values() if len(v)), default=0.0)
    div, unit = rate_scale(peak)
    fig, axes = figure(len(panels), 1, figsize=(9.0, 3.6 * len(panels)), squeeze=False)
    for ax, (name, series) in zip(axes[:, 0], panels.items()):
        colors = Colors(series)
        for label, (t, v) in series.items():
            if not len(t):
                continue
            total = label.endswith("(after the merge)")
            ax.step(
                np.append(t, t[-1] + bin_s),
                np.append(v, v[-1]) / div,
                where="post",
                color="0.2" if total else colors[label],
                ls="--" if total else "-",
                lw=1.1 if total else 1.4,
                label=label,
            )
        ax.set_ylabel(f"throughput ({unit})")
        ax.set_ylim(bottom=0, top=peak / div * 1.12 if peak > 0 else 1)
        ax.set_xlabel("time since scenario start (s)")
        if duration_s:
            ax.set_xlim(0, duration_s)
        ax.set_title(f"Per-leg throughput of {name}")
        legend_below(ax)
    fig.tight_layout()
    return fig


def plot_leg_throughput(rd: RunData, out: Path, colors: Colors) -> Plot:
    key, title = "leg_throughput", "Per-leg throughput over time"
    caption = leg_caption(rd.bin_s)
    if rd.records is None:
        return skip(key, title, caption, "no packet log (raw/packets.tlog)")
    if not rd.legs:
        return not_applicable(key, title, caption, "the run has no multipath direction")
    fig = draw_leg_throughput(leg_throughput_data(rd), rd.bin_s, rd.duration_s)
    return Plot(key, title, caption, save(fig, out / f"{key}.png"))


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
    ax.set_title("Link utilisation over time")
    legend_below(ax)
    return fig


def plot_utilisation(rd: RunData, out: Path, colors: Colors) -> Plot:
    key, title = "utilisation", "Link utilisation over time"
    caption = utilisation_caption(rd.bin_s)
    if rd.records is None:
        return skip(key, title, caption, "no packet log (raw/packets.tlog)")
    data = utilisation_data(rd)
    if not data:
        return skip(key, title, caption, "no direction with a configured rate carried packets")
    fig = draw_utilisation(data, rd.bin_s, rd.duration_s)
    return Plot(key, title, caption, save(fig, out / f"{key}.png"))


__all__ = ["plot_leg_throughput", "plot_utilisation", "draw_leg_throughput", "draw_utilisation"]
