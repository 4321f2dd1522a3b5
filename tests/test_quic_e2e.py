"""QUIC end to end: a transfer with every congestion controller completes over a lossy
(1 %) emulated link in namespaces, and the runner's metrics account for it."""

import json
import subprocess
import sys
import textwrap

import pytest

from transportlab.scenario.schema import QUIC_CC

pytestmark = pytest.mark.netns

# 2 MB at 20 Mbit/s with 1 % loss each way: under 2 s for any sane controller; the
# 30 s limit only bounds a broken one. The run ends when the download is done.
SCENARIO = textwrap.dedent(
    """
    name = "quic-e2e"
    duration = "30s"
    stop_when = "flows-done"
    seed = 3
    hosts = ["client", "server"]

    [[links]]
    name = "lossy"
    between = ["client", "server"]
    forward = {{ rate = "20Mbit", delay = "10ms", queue = {{ packets = 100 }}, loss = "1%" }}
    reverse = {{ rate = "20Mbit", delay = "10ms", queue = {{ packets = 100 }}, loss = "1%" }}

    [[flows]]
    name = "dl"
    from = "client"
    to = "server"
    protocol = "quic"
    cc = "{cc}"
    direction = "download"
    bytes = "2MB"
    """
)


@pytest.mark.parametrize("cc", QUIC_CC)
def test_quic_transfer_completes_over_a_lossy_link(tmp_path, cc):
    scenario = tmp_path / "quic.toml"
    scenario.write_text(SCENARIO.format(cc=cc))
    out = tmp_path / "out"
    res = subprocess.run([sys.executable, "-m", "transportlab", "run", str(scenario), "--out", str(out), "--quiet"],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    (metrics_path,) = out.glob("quic-e2e/**/metrics.json")
    m = json.loads(metrics_path.read_text())
    flow = m["flows"]["dl"]
    assert flow["protocol"] == "quic" and flow["cc"] == cc
    assert flow["complete"] is True, flow
    assert flow["completion_s"] is not None and flow["completion_s"] < 30
    # The server's summary names the controller that actually ran.
    server = json.loads(next(out.glob("quic-e2e/**/raw/dl-server.json")).read_text())
    assert server["results"]["cc"] == cc
    # Data crossed the lossy link and the link dropped some of it: the transfer recovered.
    assert flow["bytes_delivered"] >= 2_000_000
    assert flow["drops"].get("random_loss", 0) > 0
    assert flow["lost_packets"] > 0
    assert m["unintended_drops"] == 0
    # stop_when = "flows-done": the run ended with the download, long before its 30 s.
    raw = metrics_path.parent / "raw"
    assert int((raw / "t_end_ns").read_text()) - int((raw / "t0_ns").read_text()) < 20e9
