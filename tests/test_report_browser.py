"""The reports checked in a real browser: a short real run and a two-point sweep go end to
end through `tlab run`, and headless Chromium opens each report.html at a 1400-px wide
window. Any console error, broken image or horizontal overflow (of the page or of a
table's scroll box) fails; a screenshot of the first screen is kept beside the report."""

from __future__ import annotations

import pytest

from scenario_text import flow, link, probe, scenario
from tlab_cli import tlab_ok, write_scenario
from transportlab.report.browser import WIDTH, check_page, chromium

pytestmark = pytest.mark.netns

SCENARIO = scenario(
    "browser-check",
    link({"rate": "20Mbit", "delay": "5ms", "jitter": "1ms", "queue": {"packets": 100}}, {"delay": "5ms"}),
    flow("tcp", cc="cubic"),
    flow("udp", name="cbr", size=1000, interval="10ms"),
    probe("20ms"),
    duration="3s",
    seed=1,
)


def _run(tmp_path, text: str):
    out = tmp_path / "out"
    tlab_ok("run", write_scenario(tmp_path, text), "--out", out, "--quiet", timeout=300)
    return out / "browser-check"


def _check(report):
    shot = report.with_name("report.png")
    check = check_page(report, shot)
    assert check.problems == [], check.problems
    assert check.images > 0
    assert shot.is_file() and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    return check


def test_run_report_in_chromium(tmp_path):
    chromium()  # installed by scripts/setup.sh; missing is a failure, not a skip
    sweep = _run(tmp_path, SCENARIO)
    (report,) = sweep.glob("*/rep-0/report.html")
    check = _check(report)
    assert check.title.startswith("transportlab run")


def test_sweep_report_in_chromium(tmp_path):
    sweep = _run(tmp_path, SCENARIO + '\n[sweep]\n"links.bottleneck.forward.rate" = ["10Mbit", "20Mbit"]\n')
    check = _check(sweep / "report.html")
    assert check.title.startswith("transportlab sweep")


def test_overflow_is_reported(tmp_path):
    """The check itself: a page wider than the window and a table scrolling in its box fail."""
    page = tmp_path / "wide.html"
    cells = "".join(f"<td>column-{i}-with-long-text</td>" for i in range(60))
    page.write_text(
        f'<html><body><div class="scroll" style="overflow-x:auto"><table><tr>{cells}</tr></table></div>'
        f'<div style="width:{WIDTH + 300}px">wide</div><img alt="missing" src="nope.png">'
        "<script>console.error('boom')</script></body></html>"
    )
    problems = check_page(page).problems
    assert any("console error: boom" in p for p in problems)
    assert any("broken image: missing" in p for p in problems)
    assert sum("horizontal overflow" in p for p in problems) == 2


STUDY = """
name = "browser-study"
title = "Browser check study"
description = "Two experiments and one figure of every kind."
default_design = "quick"

[designs.quick]
repetitions = 1

[[experiments]]
name = "sweep"
file = "sweep.toml"
title = "a two-point sweep"

[[experiments]]
name = "single"
file = "single.toml"
title = "one run"

[[figures]]
id = "lines"
title = "Throughput against rate"
kind = "lines"
experiments = ["sweep"]
metrics = ["throughput_bps"]
x = "rate"
by = ["flow"]
scale = 1e-6
unit = "Mbit/s"
measured = "throughput per flow"

[[figures]]
id = "box"
title = "Throughput per flow"
kind = "box"
experiments = ["sweep", "single"]
metrics = ["throughput_bps"]
by = ["experiment", "flow"]
measured = "throughput per flow"

[[figures]]
id = "table"
title = "All numbers"
kind = "table"
experiments = ["sweep", "single"]
metrics = ["throughput_bps", "jain_index", "rtt_mean_ms"]
by = ["experiment", "flow"]
measured = "throughput, Jain's index, RTT"

[[figures]]
id = "series"
title = "Throughput over time"
kind = "timeseries"
experiments = ["sweep"]
plot = "throughput"
measured = "throughput over time"

[[figures]]
id = "query"
title = "Runs per experiment"
kind = "query"
experiments = ["sweep", "single"]
sql = "SELECT experiment, count(DISTINCT run_dir) AS runs FROM runs GROUP BY experiment ORDER BY experiment"
measured = "runs per experiment"
"""


def test_study_report_in_chromium(tmp_path):
    folder = tmp_path / "study"
    folder.mkdir()
    (folder / "single.toml").write_text(SCENARIO)
    (folder / "sweep.toml").write_text(
        SCENARIO.replace('name = "browser-check"', 'name = "browser-sweep"')
        + '\n[sweep]\n"links.bottleneck.forward.rate" = ["10Mbit", "20Mbit"]\n'
    )
    (folder / "study.toml").write_text(STUDY)
    out = tmp_path / "out"
    # Simulated first: the emulated study's report then pairs the two ("emulated against
    # simulated", every experiment both ran).
    tlab_ok("study", folder, "--smoke", "--simulate", "--out", out, "--quiet", timeout=300)
    tlab_ok("study", folder, "--smoke", "--out", out, "--quiet", timeout=300)
    report = out / "browser-study-smoke" / "report.html"
    check = _check(report)
    assert check.title.startswith("transportlab study")
    html = report.read_text()
    # Every figure drawn, in the file's order, each with its caption and its runs.
    positions = [html.index(f'id="{k}"') for k in ("lines", "box", "table", "series", "query")]
    assert positions == sorted(positions)
    assert html.count('class="caption"') == 5 and "not drawn" not in html and "Not yet run" not in html
    assert html.count("runs behind it") == 5 and "rep-0/report.html" in html
    agreement = html[html.index('id="agreement"') : html.index('id="experiments"')]
    assert "<h3>sweep:" in agreement and "<h3>single:" in agreement and "within their agreement band" in agreement
    assert "rate=10Mbit" in agreement and "rate=20Mbit" not in agreement  # smoke: the first point only
    assert "## Emulated against simulated: sweep" in (report.parent / "tables.md").read_text()
