"""The metric registry is the one list the catalogue, tables, plots, HTML report and
`tlab compare` read: every registered metric is a catalogue column, and every consumer's
columns come from it."""

from __future__ import annotations

from transportlab.artefacts import catalogue
from transportlab.artefacts.metric_registry import BY_NAME, COMPARE, METRICS, PLOTTED, TABLE
from transportlab.report import compare, html, plots, table


def test_names_are_unique_and_formats_known():
    assert len(BY_NAME) == len(METRICS)
    assert {m.format for m in METRICS} <= set(html.FORMATS)
    for m in PLOTTED:
        assert m.axis and (m.scale == "rate" or isinstance(m.scale, float)), m


def test_every_consumer_reads_the_registry():
    assert [m.name for m in METRICS if m.source == "flow"] == catalogue.FLOW_SCALARS
    assert [m.name for m in TABLE] == table.AGG_METRICS
    assert [(m.name, m.label) for m in COMPARE] == compare.COLUMNS
    assert plots.SWEEP_METRICS == PLOTTED
    assert {m.name for m in TABLE + COMPARE + PLOTTED if m.numeric} <= table.NUMERIC


def test_every_metric_is_a_catalogue_column(tmp_path):
    from test_report_plots import _pantheon_table  # a sweep table of real-shaped runs

    df = _pantheon_table(tmp_path)
    missing = [m.name for m in METRICS if m.name not in df.columns]
    assert not missing, missing


def test_a_value_prints_with_its_metrics_format():
    assert html.metric_format("throughput_bps")(12.5e6) == "12.5 Mbit/s"
    assert html.metric_format("loss_rate")(0.012) == "1.2 %"
    assert html.metric_format("rtt_mean_ms")(41.0) == "41 ms"
    assert html.metric_format("not_a_metric")(3) == "3"
