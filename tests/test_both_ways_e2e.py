"""`tlab run --both`: one scenario emulated and simulated, compared in one report; on a
link-bound QUIC transfer the two agree."""

import json
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.netns

SCENARIO = textwrap.dedent(
    """
    name = "both"
    duration = "6s"
    seed = 2
    hosts = ["client", "server"]

    [[links]]
    name = "bottleneck"
    between = ["client", "server"]
    forward = { rate = "10Mbit", delay = "10ms", queue = { packets = 50 } }
    reverse = { delay = "10ms" }

    [[flows]]
    name = "bulk"
    from = "client"
    to = "server"
    protocol = "quic"
    cc = "cubic"
    """
)


def test_both_ways_agree_on_a_link_bound_transfer(tmp_path):
    """Both modes fill the 10 Mbit/s link (≥ 9 Mbit/s over the flow's time) and their
    throughputs differ by under 5 %: the same link model decides in both; what differs
    is the hosts (real kernels and quinn on sockets vs quinn-proto in virtual time)."""
    path = tmp_path / "both.toml"
    path.write_text(SCENARIO)
    out = tmp_path / "out"
    res = subprocess.run(
        [sys.executable, "-m", "transportlab", "run", str(path), "--out", str(out), "--both", "--quiet"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr
    rates = {}
    for mode, run in (("emulated", out / "both"), ("simulated", out / "simulated" / "both")):
        m = json.loads((run / "base" / "rep-0" / "metrics.json").read_text())
        record = json.loads((run / "base" / "rep-0" / "scenario.json").read_text())
        assert record["mode"] == mode
        rates[mode] = m["flows"]["bulk"]["throughput_bps"]
    assert min(rates.values()) >= 9e6, rates
    assert abs(rates["emulated"] - rates["simulated"]) / rates["simulated"] < 0.05, rates
    assert (out / "both-both" / "report.html").is_file()
