"""Recorded runs as test data (tests/data/runs/, as Flent keeps recorded runs): one
emulated run (tests/data/runs/recorded.toml: a TCP records flow and a probe) and one
simulated (recorded_bulk.toml: a QUIC download and a probe), raw artefacts and all. Each
is re-analysed here without namespaces — metrics, catalogue row, plots and report from
its raw files — and must give back the metrics it was recorded with, so a change to the
metric or report code that moves a number shows here."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from transportlab.artefacts import packetlog
from transportlab.artefacts.catalogue import flow_rows
from transportlab.artefacts.metric_registry import METRICS
from transportlab.artefacts.rundir import RunDir
from transportlab.pipeline import analyse
from transportlab.report.tables import records as records_table

RUNS = Path(__file__).parent / "data" / "runs"
MODES = ("emulated", "simulated")


def _recorded(mode: str) -> Path:
    (run,) = sorted((RUNS / mode).glob("*/rep-0"))
    return run


@pytest.fixture(params=MODES)
def reanalysed(request, tmp_path) -> tuple[str, Path, dict]:
    src = _recorded(request.param)
    run = tmp_path / request.param / src.parent.name / src.name
    shutil.copytree(src, run)
    for stale in ("metrics.json", "summary.parquet", "report.html", "plots"):
        p = run / stale
        shutil.rmtree(p) if p.is_dir() else p.unlink(missing_ok=True)
    report = analyse(run)
    assert report.is_file() and (run / "summary.parquet").is_file()
    return request.param, run, json.loads((src / "metrics.json").read_text())


def test_reanalysis_gives_the_recorded_metrics(reanalysed):
    _, run, recorded = reanalysed
    assert json.loads((run / "metrics.json").read_text()) == recorded


def test_drops_agree_with_the_packet_log(reanalysed):
    # Counted by hand from the log: random losses on the reverse direction (the only
    # lossy one), and no unintended drop.
    mode, run, recorded = reanalysed
    recs = RunDir(run).records
    drops = recs[recs["event"] == packetlog.DROP]
    random = int(np.sum(drops["reason"] == 2))
    assert random > 0, f"{mode}: 1 % loss over 3 s drew no loss"
    assert recorded["links"]["bottleneck.reverse"]["drops"].get("random_loss", 0) == random
    assert recorded["unintended_drops"] == 0


def test_every_registered_metric_is_a_catalogue_column(reanalysed):
    _, run, _ = reanalysed
    rd = RunDir(run)
    (row, *_) = flow_rows(rd.metrics, rd.scenario, run)
    assert not [m.name for m in METRICS if m.name not in row]


def test_records_table_of_the_emulated_run():
    src = _recorded("emulated")
    flow = json.loads((src / "metrics.json").read_text())["flows"]["rec"]
    lines = records_table.table(RUNS / "emulated").splitlines()
    assert lines[0].startswith("| arm | run | records sent |") and len(lines) == 3
    cells = [c.strip() for c in lines[2].strip("|").split("|")]
    assert cells[1:4] == ["rep-0", str(flow["records_sent"]), str(flow["records_delivered"])]
    assert cells[4] == f"{flow['record_latency_ms']['p50']:.1f}"


def test_phases_table_of_the_emulated_run():
    from transportlab.report.tables import phases

    lines = phases.table(_recorded("emulated"), ["first=0s:1s", "rest=1s:3s"]).splitlines()
    assert lines[0] == "| | first (0–1 s) | rest (1–3 s) |"
    assert [l.split("|")[1].strip() for l in lines[2:]] == [
        "rec throughput (Mbit/s)",
        "ping RTT p50 (ms)",
        "ping RTT p95 (ms)",
        "ping RTT p99 (ms)",
    ]
    rtt_p50 = [float(v) for v in lines[3].strip("|").split("|")[1:]]
    assert all(20.0 <= v < 40.0 for v in rtt_p50), rtt_p50  # 2 × 10 ms one way, plus queueing


def test_tlab_table_prints_or_says_why_not(capsys, tmp_path):
    from transportlab.cli import main

    assert main(["table", "records", str(RUNS / "emulated")]) == 0
    assert capsys.readouterr().out.startswith("| arm | run | records sent |")
    assert main(["table", "web", str(tmp_path)]) == 2
    assert "no analysed run" in capsys.readouterr().err
    assert main(["table", "phases", str(_recorded("emulated")), "late=3s:1s"]) == 2
    assert "its end must come after its start" in capsys.readouterr().err
