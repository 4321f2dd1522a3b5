"""Each TCP and QUIC flow's congestion window per run (`metrics.window`), from its sending
end's series (its first connection), emulated and simulated runs alike:

    tlab table window RESULTS/s1/s1-ngtcp2-batch-size [--settle 5]   (a sweep folder, or one run folder)

Columns: the minimum RTT; the largest window before the first cut, and when that cut came
(seconds from the sender's first sample); how many cuts; the median window and smoothed RTT
from `--settle` seconds on, and the rate that window carries over that RTT."""

from __future__ import annotations

from pathlib import Path

from transportlab.metrics.window import WindowCourse, window_course
from transportlab.report.rundata import RunData
from transportlab.report.tables.common import TableError, cell, markdown, run_label, runs_in


def _row(point: str, name: str, c: WindowCourse) -> list[str]:
    rate = c.window_rate_bps
    return [point, name, cell(c.min_rtt_ms, ".1f"), f"{c.before_first_cut_bytes / 1e3:.0f}",
            cell(c.first_cut_s, ".2f"), str(c.cuts), cell(c.median_window_bytes and c.median_window_bytes / 1e3, ".0f"),
            cell(c.median_srtt_ms, ".1f"), cell(rate and rate / 1e6, ".2f")]  # fmt: skip


def table(folder: Path, settle_s: float) -> str:
    if not 0 <= settle_s < float("inf"):
        raise ValueError(f"--settle: {settle_s:g} is not a time in seconds ≥ 0")
    rows = []
    for run in runs_in(Path(folder)):
        rd = RunData.load(run.dir)
        for name in rd.flows:
            series, _ = rd.sender_series(name)
            if series is None:
                continue
            if "conn" in series:
                series = series[series["conn"] == 0]
            if len(series) and (course := window_course(series, settle_s)) is not None:
                rows.append(_row(run_label(run), name, course))
    if not rows:
        raise TableError(f"{folder}: no TCP or QUIC flow whose sender wrote a window series")
    head = ["run", "flow", "min RTT (ms)", "window before the first cut (KB)", "first cut (s)", "cuts",
            f"median window from {settle_s:g} s (KB)", "median sRTT (ms)", "window / sRTT (Mbit/s)"]  # fmt: skip
    return "\n".join(markdown(head, rows))
