"""`tlab compare` on hand-made run directories (test_report.make_run): two sweeps and a
single run side by side."""

from __future__ import annotations

import json
import re
import shutil

import pytest

from test_report import _sweep, make_run
from transportlab.cli import main
from transportlab.report.compare import CompareError, compare_rows, compare_table, load_sources, render_compare


def _two_sweeps(tmp_path):
    a = tmp_path / "a" / "demo"
    b = tmp_path / "b" / "demo"
    for root in (a, b):
        for r in _sweep(root):
            m = json.loads((r / "metrics.json").read_text())
            for f in m["flows"].values():
                f["path_delay_ms"] = {"mean": 20.0, "p50": 19.0, "p95": 30.0 if root is a else 60.0, "p99": 70.0}
            (r / "metrics.json").write_text(json.dumps(m))
    return a, b


def test_sources_labelled_apart_and_rows_from_the_catalogue(tmp_path):
    a, b = _two_sweeps(tmp_path)
    sources = load_sources([a, b])
    assert [s.label for s in sources] == ["a/demo", "b/demo"]  # same folder name: parent added
    assert [len(s.runs) for s in sources] == [4, 4]
    df = compare_rows(sources)
    assert len(df) == 2 * 4 * 2 and set(df["source"]) == {"a/demo", "b/demo"}
    agg = compare_table(df)
    assert len(agg) == 2 * 2 * 2  # source × point × flow
    row = agg[(agg["source"] == "b/demo") & (agg["point"] == "rate=20Mbit") & (agg["flow"] == "bulk")].iloc[0]
    assert row["n"] == 2 and row["throughput_bps_mean"] == 17e6 and row["path_delay_p95_ms_mean"] == 60.0


def test_compare_report_has_table_overlays_and_pantheon(tmp_path):
    a, b = _two_sweeps(tmp_path)
    single = make_run(tmp_path / "single", "one")
    report = render_compare([a, b, single], tmp_path / "cmp")
    html = report.read_text()
    # 4 table rows (2 points × 2 flows) and the sources table's row
    assert html.count("<tr><td><b>a/demo</b></td>") == 5 and html.count("<tr><td><b>single/one</b></td>") == 3
    assert "17 Mbit/s (2.83 Mbit/s)" in html  # b/demo, rate=20Mbit, bulk: 15 and 19 Mbit/s
    keys = ("compare_throughput", "compare_queueing_delay", "compare_cwnd", "compare_rtt", "pantheon")
    for key in keys:
        assert f'id="plot-{key}"' in html, key
        assert (tmp_path / "cmp" / "plots" / f"{key}.png").is_file()
    assert len(re.findall(r"data:image/png;base64,", html)) == len(keys)
    # Three sources, not one emulated and one simulated: nothing is paired.
    assert 'id="agreement"' not in html and not (tmp_path / "cmp" / "agreement.txt").exists()


def test_compare_errors_name_the_folder(tmp_path):
    with pytest.raises(CompareError, match="nope: no such folder"):
        load_sources([tmp_path / "nope"])
    (tmp_path / "empty").mkdir()
    with pytest.raises(CompareError, match="empty: no analysed run"):
        load_sources([tmp_path / "empty"])
    run = make_run(tmp_path, "r")
    with pytest.raises(CompareError, match="given twice"):
        load_sources([run, run])


def test_cli_compare(tmp_path, capsys):
    a, b = _two_sweeps(tmp_path)
    assert main(["compare", str(a), str(b), "--out", str(tmp_path / "out")]) == 0
    assert capsys.readouterr().out.strip() == str(tmp_path / "out" / "report.html")
    shutil.rmtree(a)
    assert main(["compare", str(a), str(b), "--out", str(tmp_path / "out")]) == 2
    assert "no such folder" in capsys.readouterr().err
