"""The plot registry (`report.figures.REGISTRY`): every registered plot, drawn from inputs
that have its data, is saved under its key with its registered title as the figure's
title, and the run report draws exactly the registered run plots."""

from __future__ import annotations

import json
import shutil

import matplotlib.pyplot as plt
import pyarrow as pa
import pytest

from test_recorded_runs import _recorded
from test_report import T0, _write_arrow, make_run
from test_report_plots import _multipath_run, _pantheon_table, _trace_run
from test_workloads import voip_series
from transportlab import metrics as M
from transportlab.pipeline import analyse
from transportlab.report import render_run, style, sweep_table
from transportlab.report.figures import NO_PACKET_LOG, PACKET_LOG, REGISTRY, RUN, registered
from transportlab.report.plots import RUN_PLOTS, run_plots, sweep_plots
from transportlab.report.rundata import RunData

MS = 1_000_000


@pytest.fixture
def drawn(monkeypatch) -> dict[str, str]:
    """File stem → the title of each figure saved while the test runs."""
    titles: dict[str, str] = {}
    real = style.save

    def save(fig, path):
        titles[path.stem] = fig.get_suptitle() or "".join(ax.get_title() for ax in fig.axes)
        return real(fig, path)

    monkeypatch.setattr(style, "save", save)
    yield titles
    plt.close("all")


def _voip_run(tmp_path):
    """make_run's run whose bulk flow has VoIP playout metrics (the loss-burst plot)."""
    run = make_run(tmp_path, "voip")
    metrics = json.loads((run / "metrics.json").read_text())
    metrics["flows"]["bulk"]["voip"] = M.voip_metrics(voip_series(), 12, [150 * MS])
    (run / "metrics.json").write_text(json.dumps(metrics))
    return run


def _records_run(tmp_path):
    """The recorded emulated run (a records flow), analysed again, with a page series
    for its flow (two pages: 300 and 500 ms)."""
    src = _recorded("emulated")
    run = tmp_path / "recorded" / src.name
    shutil.copytree(src, run)
    (flow,) = json.loads((src / "metrics.json").read_text())["flows"]
    _write_arrow(
        run / "raw" / f"{flow}-client-page.arrow",
        {
            "page": pa.array([0, 1], pa.uint32()),
            "page_start_ns": pa.array([T0, T0 + 1000 * MS], pa.int64()),
            "page_end_ns": pa.array([T0 + 300 * MS, T0 + 1500 * MS], pa.int64()),
        },
    )
    analyse(run)
    return run


def test_every_registered_plot_is_drawn_under_its_title(tmp_path, drawn):
    for run in (
        _records_run(tmp_path),
        _multipath_run(tmp_path / "m"),
        make_run(tmp_path / "cbr"),
        _voip_run(tmp_path),
    ):
        render_run(run)
    trace = tmp_path / "t.trace"
    trace.write_text("20\n20\n60\n100\n")
    render_run(_trace_run(tmp_path / "trace", trace))
    runs = sweep_table([tmp_path / "recorded" / _recorded("emulated").name])
    sweep_plots(runs, [], tmp_path / "sweep-records")
    pantheon = _pantheon_table(tmp_path / "sweep")
    sweep_plots(pantheon, pantheon.attrs["swept"], tmp_path / "sweep-plots")

    titles = {key: plot.title for key, plot in REGISTRY.items()}
    assert {key: drawn.get(key) for key in titles} == titles


def test_the_run_report_draws_the_registered_run_plots():
    assert {p.key for p in RUN_PLOTS} == {p.key for p in REGISTRY.values() if p.needs in (RUN, PACKET_LOG)}
    assert len(RUN_PLOTS) == len({p.key for p in RUN_PLOTS})


def test_a_run_without_a_packet_log_lists_the_plots_drawn_from_it(tmp_path):
    run = make_run(tmp_path)
    (run / "raw" / "packets.tlog").unlink()
    plots = {p.key: p for p in run_plots(RunData.load(run))}
    from_log = {p.key for p in RUN_PLOTS if p.needs == PACKET_LOG}
    assert {k for k, p in plots.items() if p.skipped == NO_PACKET_LOG} == from_log
    assert all(plots[k].applies and plots[k].path is None for k in from_log)


def test_a_key_registered_twice_is_refused():
    with pytest.raises(
        ValueError,
        match=r"plot key 'rtt' registered twice: transportlab\.report\.plots\.plot_rtt, test_plot_registry\.",
    ):

        @registered("rtt", "Another RTT plot", RUN)
        def other(spec, rd, out, colors): ...


def test_a_plot_functions_docstring_is_its_caption_on_one_line(tmp_path):
    plots = {p.key: p for p in run_plots(RunData.load(make_run(tmp_path)))}
    caption = REGISTRY["delay_cdf"].caption
    assert caption.startswith("Empirical CDF of each flow's per-packet one-way delay across its path (departure")
    assert caption.endswith("dropped packets excluded.") and "\n" not in caption and "  " not in caption
    assert plots["delay_cdf"].path is not None and plots["delay_cdf"].caption == caption
    assert REGISTRY["throughput"].caption == ""  # its caption depends on the run's bin width
