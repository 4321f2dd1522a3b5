"""QUIC end to end: a transfer with every congestion controller completes over a lossy
(1 %) emulated link in namespaces, and the runner's metrics account for it."""

import json

import pytest

from one_flow import download_until_done
from tlab_cli import run_one
from transportlab.contract import controllers

pytestmark = pytest.mark.netns

# 2 MB at 20 Mbit/s with 1 % loss each way: under 2 s for any sane controller; the
# 30 s limit only bounds a broken one. The run ends when the download is done.
LOSSY = 'rate = "20Mbit", delay = "10ms", queue = { packets = 100 }, loss = "1%"'


def scenario(cc: str) -> str:
    # An 8 MiB socket buffer: the hosts' counters below check that the emulated path drops
    # nothing on the way in, not how fast a client busy beside a compile drains the default
    # 208 KiB (a BBR startup burst overflowed it once in CI).
    flow = f'cc = "{cc}"\ndirection = "download"\nbytes = "2MB"\nrcvbuf = "8MiB"'
    return download_until_done(flow, protocol="quic", link=LOSSY, duration="30s", seed=3)


@pytest.mark.parametrize("cc", controllers("quic"))
def test_quic_transfer_completes_over_a_lossy_link(tmp_path, cc):
    m, run_dir = run_one(tmp_path, scenario(cc))
    flow = m["flows"]["dl"]
    assert flow["protocol"] == "quic" and flow["cc"] == cc
    assert flow["complete"] is True, flow
    assert flow["completion_s"] is not None and flow["completion_s"] < 30
    # The server's summary names the controller that actually ran.
    server = json.loads((run_dir / "raw" / "dl-server.json").read_text())
    assert server["results"]["cc"] == cc
    # Data crossed the lossy link and the link dropped some of it: the transfer recovered.
    assert flow["bytes_delivered"] >= 2_000_000
    assert flow["drops"].get("random_loss", 0) > 0
    assert flow["lost_packets"] > 0
    assert m["unintended_drops"] == 0
    # Each host's UDP counters: the client's sockets received the 2 MB (in datagrams of at
    # most 1472 bytes), the server's its acknowledgements; the hosts dropped none of them.
    hosts = m["hosts"]
    assert hosts["client"]["udp_datagrams_received"] >= 2_000_000 / 1472
    assert 0 < hosts["server"]["udp_datagrams_received"] < hosts["client"]["udp_datagrams_received"]
    assert hosts["client"]["udp_receive_buffer_errors"] == 0
    # stop_when = "flows-done": the run ended with the download, long before its 30 s.
    raw = run_dir / "raw"
    assert int((raw / "t_end_ns").read_text()) - int((raw / "t0_ns").read_text()) < 20e9


def test_every_quic_run_has_a_qlog_per_end_linked_from_the_report(tmp_path):
    """The runner asks both ends for a qlog: each is JSON-SEQ (records after an RS byte),
    its first record names the format, its events include packets sent and received and
    metrics updates; the run's report links both."""
    _, run_dir = run_one(tmp_path, scenario("cubic"))
    for end in ("client", "server"):
        path = run_dir / "raw" / f"dl-{end}.sqlog"
        records = [json.loads(r) for r in path.read_text().split("\x1e") if r.strip()]
        assert records[0]["qlog_format"] == "JSON-SEQ"
        names = {r.get("name") for r in records[1:]}
        assert {"transport:packet_sent", "transport:packet_received", "recovery:metrics_updated"} <= names, names
        assert f'href="raw/dl-{end}.sqlog"' in (run_dir / "report.html").read_text()
