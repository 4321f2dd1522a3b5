"""Queue disciplines and ECN end to end: kernel TCP through the engine's AQMs in
namespaces, checked from the run's metrics and packet log."""

import numpy as np
import pytest

from scenario_text import flow, link, probe, scenario, table
from tlab_cli import run_one
from transportlab.artefacts import packetlog

pytestmark = [pytest.mark.netns, pytest.mark.timing]


def aqm_scenario(queue: dict, flows: int = 1, ecn_hosts: bool = True) -> str:
    """A 10 Mbit/s, RTT 10 ms bottleneck with `queue`, `flows` CUBIC bulk flows and a
    10 ms ping from client to server, 6 s."""
    ecn = [table(f"sysctls.{host}", {"net.ipv4.tcp_ecn": 1}) for host in ("client", "server")] if ecn_hosts else []
    bulk = [flow("tcp", name=f"bulk{i}", cc="cubic") for i in range(flows)]
    return scenario(
        "aqm",
        table("analysis", {"bottleneck": "bottleneck"}),
        link({"rate": "10Mbit", "delay": "5ms", "queue": queue}, {"delay": "5ms"}),
        probe("10ms"),
        *ecn,
        *bulk,
        duration="6s",
        seed=3,
    )


def ce_departures(run_dir) -> np.ndarray:
    recs = packetlog.read_records(run_dir / "raw" / "packets.tlog")
    return (recs["event"] == packetlog.DEPARTURE) & ((recs["flags"] & packetlog.FLAG_CE_MARKED) != 0)


def test_codel_with_ecn_marks_instead_of_dropping(tmp_path):
    """Both hosts negotiate ECN and CoDel has ECN on: the bulk flow is marked, never
    dropped by the AQM, and does not retransmit; the standing queue stays near CoDel's
    5 ms target (median queueing delay < 15 ms, where the 1000-packet drop-tail queue of
    the same set-up sits at ~600 ms)."""
    m, run_dir = run_one(tmp_path, aqm_scenario({"packets": 1000, "discipline": "codel", "ecn": True}))
    bulk, link = m["flows"]["bulk0"], m["links"]["bottleneck.forward"]
    assert bulk["marks"] > 0 and link["marks"] >= bulk["marks"]
    assert bulk["drops"].get("aqm_drop", 0) == 0 and bulk["retransmissions"] == 0, bulk
    assert bulk["queueing_delay_ms"]["p50"] < 15, bulk["queueing_delay_ms"]
    assert bulk["throughput_bps"] > 9e6
    assert int(ce_departures(run_dir).sum()) == link["marks"]
    assert m["unintended_drops"] == 0


def test_codel_without_ecn_drops(tmp_path):
    """The same hosts, CoDel without ECN: the AQM drops (reason 4), marks nothing, and the
    flow retransmits what it lost."""
    m, run_dir = run_one(tmp_path, aqm_scenario({"packets": 1000, "discipline": "codel"}))
    bulk = m["flows"]["bulk0"]
    assert bulk["marks"] == 0 and not ce_departures(run_dir).any()
    assert bulk["drops"].get("aqm_drop", 0) > 0 and bulk["retransmissions"] > 0, bulk
    assert bulk["queueing_delay_ms"]["p50"] < 15, bulk["queueing_delay_ms"]


def test_fq_codel_keeps_a_sparse_flow_near_the_base_rtt(tmp_path):
    """Two bulk flows and a 10 ms ping under FQ-CoDel: the ping is a sparse flow, served
    ahead of the bulk flows, so its median RTT stays within 2 ms of the 10 ms base RTT (at
    most one bulk packet ahead of it: 1.2 ms at 10 Mbit/s; the engine adds ~0.3 ms) and
    its 99th percentile below 20 ms (host scheduling on a loaded machine; one CoDel queue
    for all flows measured ~50 ms and drop-tail ~1 s in the same set-up), and the two bulk
    flows share the link fairly."""
    m, _ = run_one(tmp_path, aqm_scenario({"packets": 1000, "discipline": "fq_codel"}, flows=2, ecn_hosts=False))
    ping = m["probes"]["ping"]
    assert ping["rtt_ms"]["p50_ms"] < 12.0 and ping["rtt_ms"]["p99_ms"] < 20.0, ping["rtt_ms"]
    assert ping["lost"] == 0
    assert m["jain_index"] > 0.98
