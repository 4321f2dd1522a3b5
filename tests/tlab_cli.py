"""Runs `tlab` as a user would (this checkout's package, output captured), and a
one-run scenario through `tlab run`."""

import json
import subprocess
import sys
from pathlib import Path


def tlab(*args: str | Path, timeout: float = 120, **popen) -> subprocess.CompletedProcess:
    """`tlab ARGS`; `popen` goes to subprocess.run (e.g. env)."""
    return subprocess.run(
        [sys.executable, "-m", "transportlab", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        **popen,
    )


def tlab_ok(*args: str | Path, timeout: float = 120, **popen) -> subprocess.CompletedProcess:
    """`tlab ARGS`, which must exit 0 (its stderr is the failure message)."""
    res = tlab(*args, timeout=timeout, **popen)
    assert res.returncode == 0, res.stderr
    return res


def write_scenario(tmp_path: Path, text: str, name: str = "scenario.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def run_one(tmp_path: Path, text: str, timeout: float = 120) -> tuple[dict, Path]:
    """Writes `text` as a scenario, runs it (must exit 0) and returns the one run's
    metrics.json and its run directory."""
    out = tmp_path / "out"
    tlab_ok("run", write_scenario(tmp_path, text), "--out", out, "--quiet", timeout=timeout)
    (metrics_path,) = out.glob("**/metrics.json")
    return json.loads(metrics_path.read_text()), metrics_path.parent
