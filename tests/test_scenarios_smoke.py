"""Every shipped scenario runs: each file under scenarios/ through `tlab run --smoke`
(its first sweep point, once, every time scaled into a few seconds) in namespaces, as a
user trying a file would. A run must exit 0 and leave metrics and a report."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from transportlab.locations import PROJECT_ROOT

# A base.toml is only included (it has no name of its own); the files built on it run.
SCENARIOS = sorted(p for p in (PROJECT_ROOT / "scenarios").rglob("*.toml") if p.name != "base.toml")
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


def test_every_scenario_file_is_found():
    # A moved folder must not silently empty the list above.
    assert len(SCENARIOS) >= 40 and PROJECT_ROOT / "scenarios" / "demo.toml" in SCENARIOS
