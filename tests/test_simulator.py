"""The simulator (`tlab run --simulate`): the same scenario files in virtual time through
the engine's own forwarder and link model, QUIC from quinn-proto. No namespaces needed."""

import json
import subprocess
import sys
import textwrap

import pytest

from transportlab.locations import PROJECT_ROOT

LINK = """
    [[links]]
    name = "bottleneck"
    between = ["client", "server"]
    forward = {{ rate = "10Mbit", delay = "10ms", queue = {{ packets = {queue} }} }}
    reverse = {{ delay = "10ms" }}
"""

QUIC = textwrap.dedent(
    """
    name = "sim-quic"
    duration = "10s"
    seed = 4
    hosts = ["client", "server"]
    [analysis]
    bottleneck = "bottleneck"
    """
    + LINK.format(queue=100)
    + """
    [[flows]]
    name = "bulk"
    from = "client"
    to = "server"
    protocol = "quic"
    cc = "{cc}"

    [[probes]]
    name = "ping"
    from = "client"
    to = "server"
    interval = "100ms"
    """
)


def simulate(tmp_path, text: str, *args: str) -> subprocess.CompletedProcess:
    path = tmp_path / "scenario.toml"
    path.write_text(text)
    return subprocess.run(
        [sys.executable, "-m", "transportlab", "run", str(path), "--out", str(tmp_path / "out"), "--simulate", *args],
        capture_output=True,
        text=True,
        timeout=300,
    )


def run_dirs(tmp_path):
    return sorted(p.parent for p in (tmp_path / "out" / "simulated").glob("**/metrics.json"))


@pytest.mark.parametrize("cc", ["cubic", "newreno"])
def test_a_quic_flow_fills_a_10mbit_link_in_simulation(tmp_path, cc):
    """One QUIC bulk flow over 10 Mbit/s with a 100-packet queue for 10 s: the last link
    carries at least 95 % of its rate over the flow's time; the run says it was simulated
    and which stack played QUIC; the probes crossed the loaded queue (RTT above 20 ms)."""
    res = simulate(tmp_path, QUIC.replace("{cc}", cc))
    assert res.returncode == 0, res.stderr
    (run,) = run_dirs(tmp_path)
    m = json.loads((run / "metrics.json").read_text())
    flow = m["flows"]["bulk"]
    assert 9.5e6 <= flow["throughput_bps"] <= 10e6 * 1.001, flow["throughput_bps"]
    assert flow["cc"] == cc and flow["lost_packets"] > 0 and m["unintended_drops"] == 0
    record = json.loads((run / "scenario.json").read_text())
    assert (record["mode"], record["stacks"]) == ("simulated", {"quic": "quinn-proto"})
    client = json.loads((run / "raw" / "bulk-client.json").read_text())["results"]
    assert client["cc"] == cc and client["bytes"] > 0.95 * 10e6 / 8 * 9
    assert m["probes"]["ping"]["rtt_ms"]["mean_ms"] > 20.0


def test_a_smoltcp_tcp_flow_fills_a_10mbit_link_in_simulation(tmp_path):
    """smoltcp's CUBIC over 10 Mbit/s, RTT 20 ms, behind CoDel: ≥ 95 % of the link, and the
    run records smoltcp as the stack that played TCP. CoDel, because smoltcp recovers a
    burst of drop-tail losses by retransmission timeouts (no SACK, 1 s minimum RTO): the
    same flow into a 100-packet drop-tail queue measured 6.5 Mbit/s — smoltcp's behaviour,
    which the simulator reports as it is rather than passing it off as Linux."""
    text = QUIC.replace('protocol = "quic"', 'protocol = "tcp"').replace(
        "queue = { packets = 100 }", 'queue = { packets = 100, discipline = "codel" }'
    )
    res = simulate(tmp_path, text.replace("{cc}", "cubic"))
    assert res.returncode == 0, res.stderr
    (run,) = run_dirs(tmp_path)
    m = json.loads((run / "metrics.json").read_text())
    assert 9.5e6 <= m["flows"]["bulk"]["throughput_bps"] <= 10e6 * 1.001, m["flows"]["bulk"]
    assert json.loads((run / "scenario.json").read_text())["stacks"] == {"tcp": "smoltcp"}
    client = json.loads((run / "raw" / "bulk-client.json").read_text())["results"]
    assert (client["stack"], client["cc"]) == ("smoltcp", "cubic")


def test_same_scenario_and_seed_give_a_byte_identical_log_and_equal_metrics(tmp_path):
    runs = []
    for i in range(2):
        d = tmp_path / str(i)
        d.mkdir()
        res = simulate(d, QUIC.replace("{cc}", "cubic"))
        assert res.returncode == 0, res.stderr
        (run,) = run_dirs(d)
        runs.append(run)
    logs = [(r / "raw" / "packets.tlog").read_bytes() for r in runs]
    assert len(logs[0]) > 10_000 and logs[0] == logs[1]
    metrics = [json.loads((r / "metrics.json").read_text()) for r in runs]
    for m in metrics:
        m["run"].pop("run_id")
    assert metrics[0] == metrics[1]


def test_a_drop_tail_queue_of_n_takes_exactly_n_of_a_burst(tmp_path):
    """S0 E0's queue experiment simulated: a 500-datagram burst arrives at one instant,
    so a 50-packet queue (counting the packet on the wire) takes exactly 50 at every rate
    and drops the other 450 — the answer the emulated validation checks."""
    res = simulate(tmp_path, (PROJECT_ROOT / "scenarios" / "s0" / "e0_queue.toml").read_text())
    assert res.returncode == 0, res.stderr
    dirs = run_dirs(tmp_path)
    assert len(dirs) == 6
    for run in dirs:
        m = json.loads((run / "metrics.json").read_text())
        received = json.loads((run / "raw" / "burst-server.json").read_text())["results"]["unique"]
        assert received == 50 and m["links"]["bottleneck.forward"]["drops"]["queue_full"] == 450, run


def test_flows_the_simulator_cannot_run_are_refused_naming_them(tmp_path):
    text = textwrap.dedent(
        """
        name = "sim-refused"
        duration = "2s"
        hosts = ["client", "server"]
        """
        + LINK.format(queue=10)
        + """
        [[flows]]
        name = "web"
        from = "client"
        to = "server"
        protocol = "tcp"
        cc = "bbr"
        """
    )
    res = simulate(tmp_path, text)
    assert res.returncode != 0
    assert "flows.web.cc: not in the simulator: 'bbr' is a kernel control; smoltcp has reno and cubic" in res.stderr
    res = simulate(tmp_path, text.replace('cc = "bbr"', "tls = true"))
    assert "flows.web: not in the simulator: the simulator runs TCP bulk transfers" in res.stderr, res.stderr
    assert not (tmp_path / "out" / "simulated" / "sim-refused").exists() or not run_dirs(tmp_path)
