"""Runs a one-run scenario through the `tlab run` command line, as a user would."""

import json
import subprocess
import sys
from pathlib import Path


def run_one(tmp_path: Path, text: str) -> tuple[dict, Path]:
    """Writes `text` as a scenario, runs it (must exit 0) and returns the one run's
    metrics.json and its run directory."""
    scenario = tmp_path / "scenario.toml"
    scenario.write_text(text)
    out = tmp_path / "out"
    res = subprocess.run(
        [sys.executable, "-m", "transportlab", "run", str(scenario), "--out", str(out), "--quiet"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 0, res.stderr
    (metrics_path,) = out.glob("**/metrics.json")
    return json.loads(metrics_path.read_text()), metrics_path.parent
