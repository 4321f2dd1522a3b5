"""Ctrl-C (SIGINT) or SIGTERM during `tlab run`: one line naming the interrupted run,
exit status 130, no traceback; the interrupted run's namespaces, devices and processes
are gone, and the runs of the sweep that had finished are intact."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from scenario_text import flow, link, scenario, table
from transportlab.locations import RUN_REGISTRY

pytestmark = pytest.mark.netns

SCENARIO = scenario(
    "interrupt",
    link({"rate": "10Mbit", "delay": "5ms", "queue": {"packets": 100}}, name="l", between=("a", "b")),
    flow("tcp", name="f", src="a", dst="b"),
    table("sweep", {"links.l.forward.delay": ["5ms", "10ms", "15ms"]}),
    duration="2s",
    hosts=["a", "b"],
)


def wait_for(cond, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = cond()
        if v:
            return v
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_mid_sweep_tears_down_and_keeps_finished_runs(tmp_path, signum):
    (tmp_path / "s.toml").write_text(SCENARIO)
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [sys.executable, "-m", "transportlab", "run", str(tmp_path / "s.toml"), "--out", str(out), "--quiet"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        # The second run is live: its record names what it built.
        wait_for(lambda: len(list(out.glob("**/DONE"))) == 1, 180, "the first run to finish")
        (first,) = [p.parent for p in out.glob("**/DONE")]
        before = {p: p.stat().st_mtime_ns for p in first.rglob("*")}
        live = wait_for(
            lambda: [p.parent for p in out.glob("**/scenario.json") if not (p.parent / "DONE").exists()],
            30,
            "the second run to start",
        )
        run_id = json.loads((live[0] / "scenario.json").read_text())["run_id"]
        wait_for(lambda: (RUN_REGISTRY / f"{run_id}.json").exists(), 30, "the run's record")
        time.sleep(1.0)  # its flow under way (the run lasts 2 s)
        record = json.loads((RUN_REGISTRY / f"{run_id}.json").read_text())
        proc.send_signal(signum)
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr, stderr
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    assert f"interrupted during {live[0]}" in lines[0] and "1 of 3 run(s) finished" in lines[0], lines[0]
    # Nothing of the interrupted run is left.
    netns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert f"tlab-{run_id}-" not in netns
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    assert f"tlab{run_id}" not in links
    assert not (RUN_REGISTRY / f"{run_id}.json").exists()
    for p in record["processes"]:
        with pytest.raises(ProcessLookupError):
            os.kill(p["pid"], 0)
    # The finished run is untouched; the interrupted one is not marked done.
    assert {p: p.stat().st_mtime_ns for p in first.rglob("*")} == before
    assert not (live[0] / "DONE").exists()
