"""Every shipped scenario runs: each study folder through `tlab study --smoke` (every
experiment's first sweep point, once, every time scaled into a few seconds, then the
study report), and each file outside a study through `tlab run --smoke`, in namespaces,
as a user trying them would. A run must exit 0 and leave metrics and a report."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from transportlab.locations import PROJECT_ROOT
from transportlab.study import load_study
from transportlab.study.spec import FILE as STUDY_FILE

# A base.toml is only included (it has no name of its own); the files built on it run.
# A study.toml is no scenario: it names its folder's experiments.
ALL = sorted(p for p in (PROJECT_ROOT / "scenarios").rglob("*.toml") if p.name not in ("base.toml", STUDY_FILE))
STUDIES = sorted(p.parent for p in (PROJECT_ROOT / "scenarios").rglob(STUDY_FILE))
IN_STUDIES = {(d / e.file).resolve() for d in STUDIES for e in load_study(d).experiments}
SCENARIOS = [p for p in ALL if p.resolve() not in IN_STUDIES]
SMOKE_SECONDS = "3"

pytestmark = pytest.mark.netns


@pytest.mark.parametrize("path", SCENARIOS, ids=[str(p.relative_to(PROJECT_ROOT / "scenarios")) for p in SCENARIOS])
def test_shipped_scenario_runs(path: Path, tmp_path: Path):
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "transportlab",
            "run",
            str(path),
            "--smoke",
            SMOKE_SECONDS,
            "--out",
            str(tmp_path),
            "--quiet",
        ],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert res.returncode == 0, f"{path}: {res.stderr.strip()}"
    (metrics_path,) = tmp_path.glob("*-smoke/**/metrics.json")
    metrics = json.loads(metrics_path.read_text())
    assert metrics["flows"] or metrics["probes"]
    assert (metrics_path.parent / "report.html").is_file()
    assert metrics["unintended_drops"] == 0, f"{path}: {metrics['unintended_drops']} unintended drops"


@pytest.mark.parametrize("folder", STUDIES, ids=[p.name for p in STUDIES])
def test_study_smoke_runs(folder: Path, tmp_path: Path):
    res = subprocess.run(
        [sys.executable, "-m", "transportlab", "study", str(folder), "--smoke", "--out", str(tmp_path), "--quiet"],
        capture_output=True,
        text=True,
        timeout=1500,
    )
    assert res.returncode == 0, f"{folder}: {res.stderr.strip()[-3000:]}"
    study = load_study(folder)
    out = tmp_path / f"{study.name}-smoke"
    assert (out / "report.html").is_file() and (out / "study.json").is_file()
    record = json.loads((out / "study.json").read_text())
    for e in study.experiments:
        assert record["experiments"][e.name]["done"] == 1, f"{folder.name}/{e.file} did not run"
    for metrics_path in out.glob("**/metrics.json"):
        metrics = json.loads(metrics_path.read_text())
        assert metrics["flows"] or metrics["probes"], metrics_path
        assert metrics["unintended_drops"] == 0, f"{metrics_path}: {metrics['unintended_drops']} unintended drops"


def test_every_scenario_file_is_found():
    # A moved folder must not silently empty the lists above; every scenario file in a
    # study's folder is one of its experiments.
    assert len(ALL) >= 40 and PROJECT_ROOT / "scenarios" / "demo.toml" in SCENARIOS
    assert [p.name for p in STUDIES] == ["s0", "s1", "s2", "s3", "s4"]
    outside = [p for p in SCENARIOS if any(d in p.parents for d in STUDIES)]
    assert outside == [], f"scenario files no study.toml lists: {outside}"
