"""`tlab compare`: several runs or sweeps side by side in one HTML report, as Flent's
multi-run comparison: one table (a row per source × point × flow, catalogue rows
aggregated over repetitions), throughput, queueing delay, congestion window and RTT over
time of every source overlaid (each line the per-bin mean over a point's repetitions),
and Pantheon's throughput–delay plot across them. An emulated and a simulated source
(`tlab run --both`) are also paired row by row first (`report.agreement`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from transportlab.artefacts.metric_registry import COMPARE
from transportlab.artefacts.rundir import FAILURES, METRICS, RunDirError
from transportlab.report.agreement import paired, pick_pair, summary_lines
from transportlab.report.figures import SOURCES, Plot, PlotFunction, PlotSpec, safe
from transportlab.report.pantheon import plot_pantheon
from transportlab.report.plots import flow_queueing, flow_throughput
from transportlab.report.rundata import RunData
from transportlab.report.style import Colors, figure, legend_below, rate_scale
from transportlab.report.table import aggregate, sweep_table

# Catalogue columns of the comparison table: (column, label), from the metric registry.
COLUMNS = [(m.name, m.label) for m in COMPARE]
MAX_LINES = 24  # overlaid lines per plot; more and the plot says so instead


class CompareError(ValueError):
    pass


@dataclass
class Source:
    """One argument of `tlab compare`: a run or a sweep folder and its analysed runs."""

    path: Path
    label: str
    runs: list[RunData]


def find_runs(path: Path) -> list[Path]:
    """The analysed runs (metrics.json, not failed) at or under `path`."""
    if (path / METRICS).is_file():
        return [path]
    return sorted(p.parent for p in path.glob(f"**/{METRICS}") if not (p.parent / "raw" / FAILURES).is_file())


def _labels(paths: Sequence[Path]) -> list[str]:
    """The shortest path tails that tell the sources apart."""
    resolved = [p.resolve() for p in paths]
    for n in range(1, max(len(p.parts) for p in resolved) + 1):
        labels = ["/".join(p.parts[-n:]) for p in resolved]
        if len(set(labels)) == len(labels):
            return labels
    raise CompareError(f"the same folder is given twice: {', '.join(map(str, paths))}")


def load_sources(paths: Sequence[str | Path]) -> list[Source]:
    """Every argument as a Source; a missing folder or one without analysed runs is an
    error naming it."""
    if len(paths) < 1:
        raise CompareError("give at least one run or sweep folder")
    dirs = [Path(p) for p in paths]
    for d in dirs:
        if not d.is_dir():
            raise CompareError(f"{d}: no such folder")
    out = []
    for d, label in zip(dirs, _labels(dirs)):
        runs = find_runs(d)
        if not runs:
            raise CompareError(f"{d}: no analysed run (metrics.json) at or under it")
        try:
            out.append(Source(d, label, [RunData.load(r) for r in runs]))
        except RunDirError as e:
            raise CompareError(str(e)) from None
    return out


def compare_rows(sources: Sequence[Source]) -> pd.DataFrame:
    """Catalogue rows (one per run × flow) of every source, with a `source` column."""
    parts = []
    numeric: dict = {}
    for s in sources:
        df = sweep_table(s.runs)
        for path, values in df.attrs.get("numeric", {}).items():
            numeric.setdefault(path, {}).update(values)
        parts.append(df.assign(source=s.label))
    df = pd.concat(parts, ignore_index=True)
    df.attrs["numeric"] = numeric
    return df


def compare_table(df: pd.DataFrame) -> pd.DataFrame:
    """Statistics over repetitions per source × point × flow (`report.table.aggregate`)."""
    return aggregate(df, metrics=[c for c, _ in COLUMNS], by=("source", "point", "flow"))


# ---- overlaid time series -----------------------------------------------------------


def _binned_mean(t_s: np.ndarray, v: np.ndarray, bin_s: float) -> tuple[np.ndarray, np.ndarray]:
    """Mean of the values per bin [k·w, (k+1)·w) of time; empty bins left out."""
    if not len(t_s):
        return np.zeros(0), np.zeros(0)
    k = np.floor(t_s / bin_s).astype(np.int64)
    keys, inv = np.unique(k, return_inverse=True)
    sums = np.bincount(inv, weights=v)
    counts = np.bincount(inv)
    return keys * bin_s, sums / counts


def _mean_over_runs(curves: list[tuple[np.ndarray, np.ndarray]], bin_s: float) -> tuple[np.ndarray, np.ndarray]:
    """Per-bin mean over the repetitions' curves (each (t_s, value) at bin starts)."""
    t = np.concatenate([c[0] for c in curves])
    v = np.concatenate([c[1] for c in curves])
    return _binned_mean(t + bin_s / 2, v, bin_s)


def _groups(sources: Sequence[Source]) -> dict[str, tuple[str, list[RunData]]]:
    """Line label → (source label, the runs of one point of that source)."""
    out: dict[str, tuple[str, list[RunData]]] = {}
    for s in sources:
        for rd in s.runs:
            point = str(rd.run.get("point") or "")
            out.setdefault(s.label + (f" [{point}]" if point else ""), (s.label, []))[1].append(rd)
    return out


def _series(sources: Sequence[Source], per_run) -> dict[str, tuple[str, np.ndarray, np.ndarray]]:
    """Line label → (source, t_s, value): `per_run(rd, flow)` → (t_s, values) for each
    run and flow, averaged per bin over a point's repetitions."""
    lines: dict[str, tuple[str, np.ndarray, np.ndarray]] = {}
    for label, (source, runs) in _groups(sources).items():
        flows = list(dict.fromkeys(f for rd in runs for f in rd.flows))
        for flow in flows:
            curves = [c for rd in runs if flow in rd.flows for c in [per_run(rd, flow)] if len(c[0])]
            if curves:
                t, v = _mean_over_runs(curves, runs[0].bin_s)
                lines[f"{label} {flow}" if len(flows) > 1 else label] = (source, t, v)
    return lines


def _throughput(rd: RunData, flow: str) -> tuple[np.ndarray, np.ndarray]:
    t, v = flow_throughput(rd, flow, max(1, int(round(rd.bin_s * 1e9))))
    return rd.seconds(t), v


def _queueing(rd: RunData, flow: str) -> tuple[np.ndarray, np.ndarray]:
    if rd.records is None:
        return np.zeros(0), np.zeros(0)
    q, _ = flow_queueing(rd, flow, rd.flows[flow])
    if q is None or not len(q):
        return np.zeros(0), np.zeros(0)
    t, v = _binned_mean(rd.seconds(q["departure_ns"].to_numpy()), q["queueing_ns"].to_numpy() / 1e6, rd.bin_s)
    return t, v


def _sender_series(rd: RunData, flow: str, column) -> tuple[np.ndarray, np.ndarray]:
    """The flow's sender series (TCP_INFO or QUIC statistics) as (t_s, value) binned by
    the run's bin; `column(df)` picks the value or returns None."""
    df, _ = rd.sender_series(flow)
    if df is None:
        return np.zeros(0), np.zeros(0)
    v = column(df)
    if v is None:
        return np.zeros(0), np.zeros(0)
    v = pd.to_numeric(v, errors="coerce").to_numpy(np.float64, na_value=np.nan)
    t = rd.seconds(df["t_ns"].to_numpy())
    keep = ~np.isnan(v)
    return _binned_mean(t[keep], v[keep], rd.bin_s)


def _cwnd(rd: RunData, flow: str) -> tuple[np.ndarray, np.ndarray]:
    def column(df):
        if "cwnd_bytes" in df:
            return df["cwnd_bytes"]
        if "cwnd" in df and "snd_mss" in df:
            return pd.to_numeric(df["cwnd"], errors="coerce") * pd.to_numeric(df["snd_mss"], errors="coerce")
        return None

    t, v = _sender_series(rd, flow, column)
    return t, v / 1e3


def _srtt(rd: RunData, flow: str) -> tuple[np.ndarray, np.ndarray]:
    t, v = _sender_series(rd, flow, lambda df: df.get("srtt_us"))
    keep = v > 0
    return t[keep], v[keep] / 1e3


@dataclass(frozen=True)
class Overlay:
    """One overlaid plot of `tlab compare`: its declaration, the per-run curve, the y label
    (a throughput's is scaled to the unit that fits), the caption, and why it is not
    drawn when no run has the curve's data."""

    plot: PlotFunction
    per_run: Callable
    ylabel: str
    caption: str
    missing: str


def _overlay(key: str, title: str, per_run: Callable, ylabel: str, caption: str, missing: str) -> Overlay:
    return Overlay(PlotFunction(key, title, SOURCES, "", plot_overlaid), per_run, ylabel, caption, missing)


def plot_overlaid(spec: PlotSpec, sources: Sequence[Source], out: Path, overlay: Overlay) -> Plot:
    lines = _series(sources, overlay.per_run)
    if not lines:
        return spec.skip(overlay.caption, overlay.missing)
    if len(lines) > MAX_LINES:
        return spec.skip(overlay.caption, f"{len(lines)} lines: more than {MAX_LINES} to overlay")
    div, ylabel = 1.0, overlay.ylabel
    if ylabel == "throughput":
        div, unit = rate_scale(max(float(v.max()) for _, _, v in lines.values() if len(v)))
        ylabel = f"throughput ({unit})"
    return spec.saved(_draw_lines(lines, ylabel, spec.title, div), out, overlay.caption)


NO_LOGGED_FLOWS = "no run has a packet log with its flows' packets"
NO_SENDER_SERIES = "no run has its flows' sender series"
# The overlaid plots, in the report's order.
OVERLAYS = [
    _overlay(
        "compare_throughput",
        "Throughput over time",
        _throughput,
        "throughput",
        "Each source's flows overlaid (one colour per source, one line style per point and flow): bits per "
        "second of the flow's data packets leaving the last link direction of its path (engine packet log), "
        "in the run's bins, the mean over a point's repetitions per bin.",
        NO_LOGGED_FLOWS,
    ),
    _overlay(
        "compare_queueing_delay",
        "Queueing delay over time",
        _queueing,
        "queueing delay (ms)",
        "Each source's flows overlaid: per-packet queueing delay at the flow's bottleneck direction (sojourn "
        "in the engine log, real times, minus serialisation at the configured rate and the configured delay), "
        "averaged per bin of the run and then over a point's repetitions.",
        NO_LOGGED_FLOWS,
    ),
    _overlay(
        "compare_cwnd",
        "Congestion window over time",
        _cwnd,
        "cwnd (kB)",
        "Each source's flows overlaid: the sender's congestion window (TCP cwnd × MSS from TCP_INFO or the "
        "simulated TCP's same series, QUIC's from its path statistics), per bin of the run, then the mean over "
        "a point's repetitions.",
        NO_SENDER_SERIES,
    ),
    _overlay(
        "compare_rtt",
        "Smoothed RTT over time",
        _srtt,
        "srtt (ms)",
        "Each source's flows overlaid: the smoothed RTT the sender reports (TCP_INFO, the simulated TCP's "
        "estimator, QUIC's path statistics), per bin of the run, then the mean over a point's repetitions.",
        NO_SENDER_SERIES,
    ),
]


def _draw_lines(lines: dict[str, tuple[str, np.ndarray, np.ndarray]], ylabel: str, title: str, div: float = 1.0):
    sources = Colors(dict.fromkeys(s for s, _, _ in lines.values()))
    styles = ["-", "--", ":", "-."]
    seen: dict[str, int] = {}
    fig, ax = figure()
    for label, (source, t, v) in lines.items():
        n = seen[source] = seen.get(source, -1) + 1
        ax.plot(t, v / div, color=sources[source], ls=styles[n % len(styles)], lw=1.2, label=label)
    ax.set_xlabel("time since scenario start (s)")
    ax.set_ylabel(ylabel)
    ax.set_ylim(bottom=0)
    ax.set_title(title)
    legend_below(ax)
    return fig


def compare_plots(sources: Sequence[Source], df: pd.DataFrame, out: Path) -> list[Plot]:
    out.mkdir(parents=True, exist_ok=True)
    schemes = ["source", "point"] + (["flow"] if df["flow"].nunique() > 1 else [])
    return [
        *(safe(o.plot, sources, out, o) for o in OVERLAYS),
        safe(plot_pantheon, df, schemes, [], out),
    ]


def render_compare(paths: Sequence[str | Path], out: str | Path) -> Path:
    """Writes <out>/report.html and <out>/plots/*.png comparing the given runs or sweeps;
    returns the report's path."""
    from transportlab.report.html import render_compare_html

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    sources = load_sources(paths)
    df = compare_rows(sources)
    plots = compare_plots(sources, df, out / "plots")
    agg = compare_table(df)
    pair = pick_pair(sources)
    pairs = paired(agg, pair[0].label, pair[1].label) if pair else None
    report = out / "report.html"
    tmp = report.with_name("report.html.tmp")
    tmp.write_text(render_compare_html(sources, agg, plots, pairs), encoding="utf-8")
    tmp.replace(report)
    if pairs is not None:
        (out / "agreement.txt").write_text("\n".join(summary_lines(pairs)) + "\n")
    return report
