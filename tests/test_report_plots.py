"""The report's distribution, link and Pantheon plots on hand-made inputs: each figure is
produced with the expected series, points and axis scales (no pixels are compared)."""

from __future__ import annotations

import json
import math

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from test_report import CBR, T0, _sweep, make_run
from transportlab import metrics as M
from transportlab.artefacts.packetlog import DEPARTURE, RECORD, write_records
from transportlab.report import render_run, render_sweep, sweep_table
from transportlab.report.distributions import draw_interarrival, draw_rtt_cdf, interarrival_data
from transportlab.report.linkplots import (
    draw_leg_throughput,
    draw_trace_capacity,
    draw_utilisation,
    leg_throughput_data,
    trace_capacity_data,
    trace_opportunities_ns,
)
from transportlab.report.pantheon import draw_pantheon, pantheon_groups, sigma_ellipse
from transportlab.report.plots import SWEEP_METRICS, by_connection, pantheon_layout, sweep_plots
from transportlab.report.rundata import RunData

MS = 1_000_000


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _departures(direction: int, times_ns, size: int = 1000) -> list[tuple]:
    # UDP datagrams: the payload is the size less IPv4's 20 and UDP's 8 header bytes.
    return [
        (int(t), i, 1, 2, 1000, 2000, size, direction, 17, DEPARTURE, 0, 0, 0, 0, size - 28)
        for i, t in enumerate(times_ns, 1)
    ]


# ---- metrics the plots draw -----------------------------------------------------------


def test_interarrival_is_the_gap_between_sorted_arrivals():
    assert list(M.interarrival([30, 10, 20, 45])) == [10, 10, 15]
    assert len(M.interarrival([5])) == 0


def test_utilisation_over_time_per_bin():
    # 10 Mbit/s direction, 100 ms bins: 125 kB in bin 0 (100 %), 62.5 kB in bin 1 (50 %).
    rows = _departures(0, [10 * MS] * 125 + [150 * MS] * 62 + [160 * MS]) + _departures(1, [20 * MS])
    u = M.utilisation_over_time(np.array(rows, dtype=RECORD), 0, 10e6, 100 * MS, origin_ns=0, end_ns=200 * MS)
    assert list(u.index) == [0, 100 * MS]
    assert u.iloc[0] == pytest.approx(1.0) and u.iloc[1] == pytest.approx(63_000 * 8 / 1e6)
    with pytest.raises(ValueError):
        M.utilisation_over_time(np.array(rows, dtype=RECORD), 0, 0, 100 * MS)


# ---- inter-arrival histogram and RTT CDF ------------------------------------------------


def test_interarrival_histogram_one_series_per_flow():
    rng = np.random.default_rng(3)
    data = {"cbr": (20 + rng.normal(0, 2, 400), "packet log"), "cbr2": (np.full(100, 20.0), "UDP receiver")}
    fig = draw_interarrival(data)
    (ax,) = fig.axes
    assert len(ax.patches) == 2  # one step outline per flow
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert len(labels) == 2 and "n=400" in labels[0] and "UDP receiver" in labels[1]
    assert ax.get_xlabel() == "inter-arrival time (ms)"


def test_interarrival_from_the_packet_log_of_a_run(tmp_path):
    # make_run's cbr flow is UDP (one packet every 8 ms, some dropped in the shared queue)
    rd = RunData.load(make_run(tmp_path))
    data = interarrival_data(rd)
    assert list(data) == ["cbr"]  # the TCP flow crosses no jittered direction
    gaps, source = data["cbr"]
    assert source == "packet log"
    dep = M.select(rd.records, CBR, direction=0, event=DEPARTURE)
    t = np.sort(np.asarray(dep["t_ns"], dtype=np.int64))
    assert len(gaps) == len(t) - 1 and gaps.sum() == pytest.approx((t[-1] - t[0]) / 1e6)
    assert gaps.min() >= 1000 * 8 / 10e6 * 1e3 - 1e-9  # never closer than one serialisation


def test_rtt_cdf_axis_is_log_only_when_values_span_decades():
    narrow = draw_rtt_cdf({"a srtt (client)": np.linspace(10, 60, 50), "probe p": np.linspace(11, 50, 30)})
    (ax,) = narrow.axes
    assert len(ax.get_lines()) == 2 and ax.get_xscale() == "linear"
    assert len(ax.get_lines()[0].get_xdata()) == 50
    wide = draw_rtt_cdf({"a srtt (client)": np.array([0.2, 1.0, 5.0, 40.0])})
    assert wide.axes[0].get_xscale() == "log"


def test_run_report_rtt_axes_log_when_rtts_span_decades(tmp_path):
    from transportlab.report.plots import plot_rtt

    run = make_run(tmp_path)
    rd = RunData.load(run)
    # make_run's RTTs are 10..50 ms: linear
    assert not _yscale_log(plot_rtt, rd, tmp_path)


def _yscale_log(fn, rd, out) -> bool:
    seen = {}
    real = plt.Figure.savefig

    def spy(fig, *a, **k):
        seen["log"] = fig.axes[0].get_yscale() == "log"
        return real(fig, *a, **k)

    plt.Figure.savefig = spy  # type: ignore[method-assign]
    try:
        from transportlab.report.style import Colors

        fn(rd, out, Colors())
    finally:
        plt.Figure.savefig = real  # type: ignore[method-assign]
    return seen["log"]


# ---- per-leg throughput and utilisation ------------------------------------------------


def _multipath_run(tmp_path):
    """make_run's run with a multipath direction 2 whose legs are directions 3 and 4:
    leg 3 carries 1000 B every 1 ms (8 Mbit/s), leg 4 every 2 ms (4 Mbit/s)."""
    run = make_run(tmp_path)
    dirs = [
        {"name": "bottleneck.forward"},
        {"name": "bottleneck.reverse"},
        {"name": "radio.forward"},
        {"name": "radio.forward.master", "leg_of": 2},
        {"name": "radio.forward.secondary", "leg_of": 2},
    ]
    (run / "raw" / "engine.json").write_text(json.dumps({"directions": dirs}))
    t1 = T0 + np.arange(0, 2000, 1) * MS
    t2 = T0 + np.arange(0, 2000, 2) * MS
    rows = _departures(3, t1) + _departures(4, t2) + _departures(2, np.sort(np.concatenate([t1, t2])) + MS)
    rows.sort(key=lambda r: r[0])
    write_records(run / "raw" / "packets.tlog", np.array(rows, dtype=RECORD))
    return run


def test_leg_throughput_one_panel_per_multipath_direction(tmp_path):
    rd = RunData.load(_multipath_run(tmp_path))
    panels = leg_throughput_data(rd)
    assert list(panels) == ["radio.forward"]
    series = panels["radio.forward"]
    assert list(series) == ["leg master", "leg secondary", "radio.forward (after the merge)"]
    t, bps = series["leg master"]
    assert len(t) == 40  # 2 s in 50 ms bins
    assert np.median(bps) == pytest.approx(8e6) and np.median(series["leg secondary"][1]) == pytest.approx(4e6)
    fig = draw_leg_throughput(panels, rd.bin_s, rd.duration_s)
    (ax,) = fig.axes
    assert len(ax.get_lines()) == 3
    two = draw_leg_throughput({"a": series, "b": series}, rd.bin_s)
    assert len(two.axes) == 2


def test_run_report_has_leg_and_utilisation_plots(tmp_path):
    run = _multipath_run(tmp_path)
    html = render_run(run).read_text()
    assert (run / "plots" / "leg_throughput.png").is_file()
    assert "Per-leg throughput over time" in html and "t_ns" in html


def test_utilisation_lines_per_direction():
    t = np.arange(10) * 0.1
    fig = draw_utilisation({"a.forward": (t, np.full(10, 0.5)), "b.forward": (t, np.full(10, 1.0))}, 0.1, 1.0)
    (ax,) = fig.axes
    lines = ax.get_lines()
    assert len(lines) == 3  # two directions and the 100 % line
    assert max(lines[1].get_ydata()) == pytest.approx(100.0)
    assert ax.get_ylabel().startswith("utilisation")


def test_no_multipath_no_leg_plot_and_not_listed(tmp_path):
    html = render_run(make_run(tmp_path)).read_text()
    assert "Per-leg throughput" not in html  # does not apply: no multipath direction


# ---- a trace's capacity beside the departures --------------------------------------------


def test_trace_opportunities_start_at_the_offset_and_repeat():
    # Period 100 ms, opportunities at 20, 20, 60 and 100 ms; at time 0 the trace stands at
    # 20 ms: opportunities at 0, 0, 40, 80, then 100, 100, 140, 180 ms…
    def at(offset_ms, duration_ms):
        return list(trace_opportunities_ns([20, 20, 60, 100], offset_ms * MS, duration_ms * MS) // MS)

    assert at(20, 200) == [0, 0, 40, 80, 100, 100, 140, 180]
    # An offset beyond the period wraps; no offset starts at the trace's first line.
    assert at(120, 100) == [0, 0, 40, 80]
    assert at(0, 100) == [20, 20, 60]


def _trace_run(tmp_path, trace_file):
    run = make_run(tmp_path)
    scenario = json.loads((run / "scenario.json").read_text())
    scenario["links"][0]["forward"] = {"trace": str(trace_file), "trace_offset": 0.02, "delay": 0.0}
    (run / "scenario.json").write_text(json.dumps(scenario))
    # Two 1500-byte departures per 100 ms, at 0 and 40 ms of each.
    times = T0 + np.sort(np.concatenate([np.arange(0, 2000, 100), np.arange(40, 2000, 100)])) * MS
    write_records(run / "raw" / "packets.tlog", np.array(_departures(0, times, size=1500), dtype=RECORD))
    return run


def test_trace_capacity_per_bin_beside_the_departures(tmp_path):
    trace = tmp_path / "t.trace"
    trace.write_text("20\n20\n60\n100\n")
    rd = RunData.load(_trace_run(tmp_path, trace))
    panels, problems = trace_capacity_data(rd)
    assert problems == [] and list(panels) == ["bottleneck.forward"]
    t, cap = panels["bottleneck.forward"]["trace capacity"]
    assert len(t) == 40  # 2 s in 50 ms bins
    # [0, 50) ms: opportunities at 0, 0 and 40 ms; [50, 100): at 80 ms — 1500 B each.
    assert cap[0] == pytest.approx(3 * 1500 * 8 / 0.05) and cap[1] == pytest.approx(1500 * 8 / 0.05)
    assert cap[38] == cap[0] and cap[39] == cap[1]
    _, departed = panels["bottleneck.forward"]["departed"]
    assert departed[0] == pytest.approx(2 * 1500 * 8 / 0.05) and departed[1] == 0
    fig = draw_trace_capacity(panels, rd.bin_s, rd.duration_s)
    (ax,) = fig.axes
    assert len(ax.get_lines()) == 1 and len(ax.collections) == 1  # departures over the filled capacity


def test_trace_capacity_plot_in_the_report_and_a_missing_trace_said(tmp_path):
    trace = tmp_path / "t.trace"
    trace.write_text("20\n20\n60\n100\n")
    run = _trace_run(tmp_path, trace)
    html = render_run(run).read_text()
    assert (run / "plots" / "trace_capacity.png").is_file() and "Trace capacity and departures" in html
    trace.unlink()
    _, problems = trace_capacity_data(RunData.load(run))
    assert len(problems) == 1 and "bottleneck.forward" in problems[0] and "t.trace" in problems[0]
    assert "Trace capacity" not in render_run(make_run(tmp_path, "plain")).read_text()


# ---- Pantheon plot -----------------------------------------------------------------------


def test_sigma_ellipse_follows_the_covariance():
    w, h, angle = sigma_ellipse(np.array([0.0, 2.0]), np.array([0.0, 0.0]))
    assert w == pytest.approx(2 * math.sqrt(2)) and h == pytest.approx(0.0)
    assert angle % 180 == pytest.approx(0.0)
    w, h, angle = sigma_ellipse(np.array([0.0, 1.0, 2.0]), np.array([0.0, 1.0, 2.0]))
    assert angle % 180 == pytest.approx(45.0) and h == pytest.approx(0.0, abs=1e-9)
    assert sigma_ellipse(np.array([1.0]), np.array([1.0])) is None


def test_pantheon_markers_ellipses_and_reversed_delay_axis():
    panels = {
        "rate 10 Mbit/s": {
            "cubic": (np.array([50.0, 60.0, 55.0]), np.array([9e6, 9.5e6, 9.2e6])),
            "bbr": (np.array([12.0, 14.0]), np.array([8.8e6, 9.1e6])),
            "vegas": (np.array([6.0]), np.array([6e6])),
        },
        "rate 1 Mbit/s": {"cubic": (np.array([500.0, 520.0]), np.array([0.9e6, 0.95e6]))},
    }
    fig = draw_pantheon(panels)
    ax1, ax2 = [a for a in fig.axes if a.get_visible()]
    assert ax1.xaxis_inverted() and ax2.xaxis_inverted()
    assert len(ax1.patches) == 2  # ellipses for the schemes with two or more runs
    assert len(ax1.get_lines()) == 6  # per scheme: its runs and its mean marker
    means = [l for l in ax1.get_lines() if len(l.get_xdata()) == 1 and l.get_marker() != "."]
    assert len(means) == 3
    assert ax1.get_legend() is not None and len(ax1.get_legend().get_texts()) == 3
    assert "one-way delay" in ax1.get_xlabel()


def _pantheon_table(tmp_path):
    runs = _sweep(tmp_path)
    df = sweep_table(runs)
    df["path_delay_p95_ms"] = 20.0 + df["throughput_bps"] / 1e6
    return df


def test_pantheon_groups_one_scheme_per_point_and_flow(tmp_path):
    df = _pantheon_table(tmp_path)
    schemes, panels = pantheon_layout(df, df.attrs["swept"])
    assert schemes == ["point", "flow"] and panels == []  # the only swept path is numeric
    groups = pantheon_groups(df, schemes, panels)
    (only,) = groups.values()
    assert len(only) == 4  # 2 points × 2 flows
    d, t = only["rate=20Mbit · bulk"]
    assert list(t) == [15e6, 19e6] and list(d) == [35.0, 39.0]


def test_pantheon_layout_panels_by_numeric_paths():
    df = pd.DataFrame({"rate": ["1Mbit", "10Mbit"], "cc": ["cubic", "bbr"], "flow": ["bulk", "bulk"]})
    df.attrs["numeric"] = {"rate": {"1Mbit": (1e6, "rate"), "10Mbit": (1e7, "rate")}}
    assert pantheon_layout(df, ["rate", "cc"]) == (["cc"], ["rate"])


def test_sweep_plots_box_for_every_metric_and_pantheon(tmp_path):
    df = _pantheon_table(tmp_path)
    plots = {p.key: p for p in sweep_plots(df, df.attrs["swept"], tmp_path / "plots")}
    for m in SWEEP_METRICS:
        col = m.name
        box = plots[f"box_{col}"]
        has_values = col in df and df[col].notna().any()
        assert (box.path is not None) == has_values, (col, box.skipped)
        assert box.applies == has_values
    assert plots["pantheon"].path is not None and plots["pantheon"].path.is_file()
    assert "reversed" in plots["pantheon"].caption


def test_sweep_report_shows_pantheon_with_caption(tmp_path):
    runs = _sweep(tmp_path)
    for r in runs:  # the catalogue's one-way delay p95 comes from metrics.json
        m = json.loads((r / "metrics.json").read_text())
        for f in m["flows"].values():
            f["path_delay_ms"] = {"mean": 20.0, "p50": 19.0, "p95": 30.0, "p99": 33.0}
        (r / "metrics.json").write_text(json.dumps(m))
    html = render_sweep(tmp_path / "sweep", runs).read_text()
    assert 'id="plot-pantheon"' in html and "95th percentile of the per-packet one-way delay" in html
    assert sweep_table(runs)["path_delay_p95_ms"].eq(30.0).all()


def test_a_sender_series_of_several_connections_is_drawn_per_connection():
    """The RTT and cwnd plots draw a line per connection, named in its label, in time order."""
    series = pd.DataFrame({"t_ns": [3, 1, 2, 4], "conn": [1, 0, 1, 0]})
    parts = [(label, part["t_ns"].tolist()) for label, part in by_connection(series)]
    assert parts == [(" conn 0", [1, 4]), (" conn 1", [2, 3])]
    one = series[series["conn"] == 0]
    assert [(label, part["t_ns"].tolist()) for label, part in by_connection(one)] == [("", [1, 4])]
