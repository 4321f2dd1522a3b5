"""The simulator (`tlab run --simulate`): the same scenario files in virtual time through
the engine's own forwarder and link model, QUIC from quinn-proto. No namespaces needed."""

import json
import subprocess
from pathlib import Path

import pytest

from scenario_text import flow, link, probe, scenario, table
from tlab_cli import tlab, write_scenario
from transportlab import contract
from transportlab.artefacts.qlog import read_traces
from transportlab.locations import PROJECT_ROOT
from transportlab.scenario.tcp_rmem import TCP_RMEM


def bottleneck(queue: dict, reverse: dict | None = None) -> str:
    """The 10 Mbit/s, 10 ms each way link with `queue`; the reverse direction only delays
    unless `reverse` says otherwise."""
    return link({"rate": "10Mbit", "delay": "10ms", "queue": queue}, reverse or {"delay": "10ms"})


def bulk(protocol: str = "quic", cc: str = "cubic", queue: dict | None = None, **fields) -> str:
    """One bulk flow over the bottleneck (a 100-packet drop-tail queue unless `queue` says
    otherwise) for 10 s, pinged every 100 ms."""
    return scenario(
        "sim-quic",
        table("analysis", {"bottleneck": "bottleneck"}),
        bottleneck(queue or {"packets": 100}),
        flow(protocol, cc=cc, **fields),
        probe("100ms"),
        duration="10s",
        seed=4,
    )


def simulate(tmp_path, text: str, *args: str) -> subprocess.CompletedProcess:
    return tlab("run", write_scenario(tmp_path, text), "--out", tmp_path / "out", "--simulate", *args, timeout=300)


def simulate_one(tmp_path, text: str) -> Path:
    """Simulates `text` (must exit 0) and returns its one run's folder."""
    res = simulate(tmp_path, text)
    assert res.returncode == 0, res.stderr
    (run,) = run_dirs(tmp_path)
    return run


def run_dirs(tmp_path):
    return sorted(p.parent for p in (tmp_path / "out" / "simulated").glob("**/metrics.json"))


@pytest.mark.parametrize("cc", ["cubic", "newreno"])
def test_a_quic_flow_fills_a_10mbit_link_in_simulation(tmp_path, cc):
    """One QUIC bulk flow over 10 Mbit/s with a 100-packet queue for 10 s: the last link
    carries at least 95 % of its rate over the flow's time; the run says it was simulated
    and which stack played QUIC; the probes crossed the loaded queue (RTT above 20 ms)."""
    run = simulate_one(tmp_path, bulk("quic", cc))
    m = json.loads((run / "metrics.json").read_text())
    flow = m["flows"]["bulk"]
    assert 9.5e6 <= flow["throughput_bps"] <= 10e6 * 1.001, flow["throughput_bps"]
    assert flow["cc"] == cc and flow["lost_packets"] > 0 and m["unintended_drops"] == 0
    record = json.loads((run / "scenario.json").read_text())
    assert (record["mode"], record["stacks"]) == ("simulated", {"quic": "quinn-proto"})
    client = json.loads((run / "raw" / "bulk-client.json").read_text())["results"]
    assert client["cc"] == cc and client["bytes"] > 0.95 * 10e6 / 8 * 9
    assert m["probes"]["ping"]["rtt_ms"]["mean_ms"] > 20.0
    # The series the agent writes, from quinn's statistics every 10 ms: the smoothed RTT
    # distribution is there, above the 20 ms base RTT (the flow keeps a queue).
    assert flow["rtt_ms"] is not None and flow["rtt_ms"]["p50"] > 20.0, flow["rtt_ms"]
    # Both ends write the agent's qlog, in virtual time: the sender's (the client's, in an
    # upload) declares as many packets lost as its statistics count, while it sends.
    (client,) = read_traces(run / "raw" / "bulk-client.sqlog")
    sent = [t for t, name, _ in client.events if name == "transport:packet_sent"]
    lost = [t for t, name, _ in client.events if name == "recovery:packet_lost"]
    assert len(lost) == flow["lost_packets"] and sent[0] < min(lost) <= max(lost) <= sent[-1]
    (server,) = read_traces(run / "raw" / "bulk-server.sqlog")
    received = sum(name == "transport:packet_received" for _, name, _ in server.events)
    assert 0.95 * (len(sent) - len(lost)) <= received <= len(sent)  # some in flight at the end
    # `tlab table quic-losses` splits those losses by the server's order of arrival: every
    # one is counted once (a drop-tail queue: most never arrived). It knows quinn-proto's
    # qlogs (RTTs in seconds) by their title (the contract's prefixes; the Rust side writes it).
    assert server.title and server.title.startswith(contract.quinn_qlog_title_prefixes()), server.title
    res = tlab("table", "quic-losses", run, timeout=60)
    assert res.returncode == 0, res.stderr
    (row,) = [line.split(" | ") for line in res.stdout.splitlines() if "| bulk |" in line]
    declared, by_packet, by_time, never = (int(x) for x in row[2:6])
    assert declared == flow["lost_packets"] == by_packet + by_time + never and never > declared / 2


def test_a_smoltcp_tcp_flow_fills_a_10mbit_link_in_simulation(tmp_path):
    """smoltcp's CUBIC over 10 Mbit/s, RTT 20 ms, behind CoDel: ≥ 95 % of the link, and the
    run records smoltcp as the stack that played TCP. CoDel, because smoltcp recovers a
    burst of drop-tail losses by retransmission timeouts (no SACK, 1 s minimum RTO): the
    same flow into a 100-packet drop-tail queue measured 6.5 Mbit/s — smoltcp's behaviour,
    which the simulator reports as it is rather than passing it off as Linux."""
    run = simulate_one(
        tmp_path, bulk("tcp", "cubic", {"packets": 100, "discipline": "codel"}, implementation="smoltcp")
    )
    m = json.loads((run / "metrics.json").read_text())
    assert 9.5e6 <= m["flows"]["bulk"]["throughput_bps"] <= 10e6 * 1.001, m["flows"]["bulk"]
    assert json.loads((run / "scenario.json").read_text())["stacks"] == {"tcp": "smoltcp"}
    client = json.loads((run / "raw" / "bulk-client.json").read_text())["results"]
    assert (client["stack"], client["cc"]) == ("smoltcp", "cubic")
    # smoltcp's estimator is private: the endpoint times segments itself (Karn's rule) and
    # writes the series, so the flow has the smoothed-RTT metrics: above the 20 ms base
    # RTT, below base + CoDel's 5 ms target + the 100-packet queue's 120 ms; and it counts
    # the sender's retransmissions, at least one per data packet CoDel dropped.
    flow = m["flows"]["bulk"]
    assert 20.0 <= flow["rtt_ms"]["p50"] < 140.0, flow["rtt_ms"]
    assert flow["retransmissions"] >= sum(flow["drops"].values()) > 0, flow


@pytest.mark.parametrize("cc", ["cubic", "reno"])
def test_the_labs_tcp_fills_a_drop_tail_10mbit_link_in_simulation(tmp_path, cc):
    """The simulator's own TCP (transportlab-tcp, Linux's behaviour) over 10 Mbit/s, RTT
    20 ms, into a 100-packet drop-tail queue for 10 s: ≥ 95 % of the link (smoltcp got
    6.5 Mbit/s here: its losses end in 1 s timeouts), every queue drop repaired by a
    retransmission, none by a timeout's go-back-N; the run records the stack by its
    name, and the series has the window (cwnd) as the kernel's has."""
    run = simulate_one(tmp_path, bulk("tcp", cc))
    m = json.loads((run / "metrics.json").read_text())
    flow = m["flows"]["bulk"]
    assert 9.5e6 <= flow["throughput_bps"] <= 10e6 * 1.001, flow
    assert json.loads((run / "scenario.json").read_text())["stacks"] == {"tcp": "transportlab-tcp"}
    client = json.loads((run / "raw" / "bulk-client.json").read_text())["results"]
    assert (client["stack"], client["cc"]) == ("transportlab-tcp", cc)
    drops = sum(flow["drops"].values())
    assert drops > 0 and drops <= flow["retransmissions"] <= 2 * drops, flow
    import pyarrow.ipc

    series = pyarrow.ipc.open_file(run / "raw" / "bulk-client.arrow").read_all()
    assert "cwnd" in series.column_names and max(series.column("cwnd").to_pylist()) > 10
    assert 20.0 <= flow["rtt_ms"]["p50"] < 140.0, flow["rtt_ms"]


@pytest.mark.parametrize("protocol", ["quic", "tcp"])
def test_same_scenario_and_seed_give_a_byte_identical_log_and_equal_metrics(tmp_path, protocol):
    runs = []
    for i in range(2):
        d = tmp_path / str(i)
        d.mkdir()
        run = simulate_one(d, bulk(protocol))
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
    text = scenario("sim-refused", bottleneck({"packets": 10}), flow("tcp", name="web", cc="bbr"), duration="2s")
    res = simulate(tmp_path, text)
    assert res.returncode != 0
    assert (
        "flows.web.cc: not in the simulator: 'bbr' is a kernel control; transportlab-tcp has reno and cubic"
        in res.stderr
    )
    res = simulate(tmp_path, text.replace('cc = "bbr"', "tls = true"))
    assert "flows.web: not in the simulator: the simulator runs TCP bulk transfers" in res.stderr, res.stderr
    res = simulate(tmp_path, text.replace('cc = "bbr"', "objects = { count = 3, size = 1000 }"))
    assert "flows.web: not in the simulator: the simulator runs TCP bulk transfers" in res.stderr, res.stderr
    quic = text.replace('protocol = "tcp"', 'protocol = "quic"')
    res = simulate(tmp_path, quic.replace('cc = "bbr"', 'rcvbuf = "32MiB"'))
    assert "flows.web.rcvbuf: not in the simulator: a UDP socket receive buffer" in res.stderr, res.stderr
    # Of the kernel settings only tcp_rmem, and only for the lab's TCP in ascending order.
    reno = text.replace('cc = "bbr"', 'cc = "reno"')
    res = simulate(tmp_path, reno + sysctls("server", {"net.core.somaxconn": "1024"}))
    assert 'sysctls.server."net.core.somaxconn": not in the simulator: the simulated hosts have no kernel' in res.stderr
    res = simulate(tmp_path, reno + sysctls("server", {TCP_RMEM: "4096 65536 32768"}))
    assert (
        f"sysctls.server.\"{TCP_RMEM}\": not in the simulator: '4096 65536 32768': the simulated TCP takes min ≤ default ≤ max"
        in res.stderr
    ), res.stderr
    smol = reno.replace('cc = "reno"', 'cc = "reno"\nimplementation = "smoltcp"')
    res = simulate(tmp_path, smol + sysctls("server", {TCP_RMEM: "4096 65536 131072"}))
    assert "flows.web runs on smoltcp, whose buffers are fixed 8 MiB rings" in res.stderr, res.stderr
    assert not (tmp_path / "out" / "simulated" / "sim-refused").exists() or not run_dirs(tmp_path)


def sysctls(host: str, values: dict[str, str]) -> str:
    return f"\n[sysctls.{host}]\n" + "".join(f'"{k}" = "{v}"\n' for k, v in values.items())


def test_the_receivers_tcp_rmem_sets_the_simulated_tcps_window(tmp_path):
    """tcp_rmem "4096 8192 16384" on the receiving server: the buffer starts at 8192 and
    autotuning takes it at most to 16384, so the window never exceeds half of that, 8192
    bytes (the window scale, ilog2(212992) − 15 = 2, rounds to 4). One window per RTT of
    at least 20 ms: at most 8192 · 10 s / 20 ms = 4 096 000 bytes in the 10 s (the link
    alone carries ~11.9 MB). At least: the sender sends whole segments only, 5 of 1448
    (7240 bytes) a round, and a round lasts at most the RTT, a packet's 1.2 ms on the
    link and the 40 ms most a delayed ACK waits: 7240 · 10 s / 61.2 ms = 1 183 006 bytes.
    The simulator gets the three values; without them the link is the limit."""
    run = simulate_one(tmp_path, bulk("tcp", "reno") + sysctls("server", {TCP_RMEM: "4096 8192 16384"}))
    config = json.loads((run / "raw" / "sim-config.json").read_text())
    assert config["flows"][0]["rmem"] == [4096, 8192, 16384]
    received = json.loads((run / "raw" / "bulk-client.json").read_text())["results"]["bytes"]
    assert 1_183_006 <= received <= 4_096_000, received
    # Without it, the path's limits (Linux's default 6291456 here) leave the link the limit.
    (tmp_path / "default").mkdir()
    run = simulate_one(tmp_path / "default", bulk("tcp", "reno"))
    config = json.loads((run / "raw" / "sim-config.json").read_text())
    assert config["flows"][0]["rmem"] == [4096, 131072, 6291456]
    assert json.loads((run / "raw" / "bulk-client.json").read_text())["results"]["bytes"] > 10_000_000


def test_quic_through_dualpi2_is_marked_not_dropped(tmp_path):
    """quinn sends ECT(0): DualPI2 classifies it classic and, with `ecn`, marks it with
    p_C = p'² instead of dropping; quinn reacts to new CE counts with congestion events
    (at most one per mark); nothing is dropped or lost."""
    text = bulk("quic", "cubic", {"packets": 1000, "discipline": "dualpi2", "ecn": True})
    run = simulate_one(tmp_path, text)
    flow = json.loads((run / "metrics.json").read_text())["flows"]["bulk"]
    assert flow["marks"] > 0 and flow["drops"] == {} and flow["lost_packets"] == 0, flow
    assert 0 < flow["congestion_events"] <= flow["marks"]


@pytest.mark.parametrize("direction", ["upload", "download"])
def test_quic_constant_rate_messages(tmp_path, direction):
    """S3's QUIC workload in the simulator: 1200-byte messages at 100/s until 3 s over an
    uncongested 10 Mbit/s, 10 ms one-way link (both ways). The pacing starts once the
    sender has the stream (after the handshake, as the agent's; the server a half RTT
    later), so 3 s less a handshake holds 297–298 deadlines; every message made arrives,
    each one's one-way delay (deadline stamped in it → last byte read) is the 10 ms path
    plus its serialisation (~1 ms) and the packet that may precede it: 10–13 ms."""
    reverse = {"rate": "10Mbit", "delay": "10ms"} if direction == "download" else None
    text = scenario(
        "sim-messages",
        bottleneck({"packets": 100}, reverse),
        flow("quic", name="msgs", size=1200, rate="960kbit", stop="3s", direction=direction),
        duration="4s",
    )
    run = simulate_one(tmp_path, text)
    client = json.loads((run / "raw" / "msgs-client.json").read_text())["results"]
    conn = json.loads((run / "raw" / "msgs-server.json").read_text())["results"]["connections"][0]
    sender, receiver = (client, conn) if direction == "upload" else (conn, client)
    assert client["mode"] == conn["mode"] == "messages"
    sent = sender["messages_sent"]
    assert 295 <= sent < 300 and receiver["messages_received"] == sent, (sender, receiver)
    owd = receiver["owd"]
    assert owd["min_ms"] >= 10.0 and owd["max_ms"] <= 13.0, owd


def test_quic_objects_and_several_streams(tmp_path):
    """The agent's other QUIC applications in the simulator, one after the other on a
    10 Mbit/s link: 20 objects of 100 kB downloaded 4 at a time, each on its own stream
    (each whole, a time to first byte above the 20 ms RTT, all 20 served); a 3 000 001-byte
    download on 3 streams (each its share, the remainder on the first, as the agent
    splits it); a 4 s upload on 2 streams (both carry about half). Goodput counts the
    handshake, as the agent's does (docs/metrics.md): the bytes over the completion time."""
    objects = {"count": 20, "size": 100000}
    text = scenario(
        "sim-streams",
        bottleneck({"packets": 100}, {"rate": "10Mbit", "delay": "10ms"}),
        flow("quic", name="objs", direction="download", objects=objects, streams=4),
        flow("quic", name="multi", direction="download", bytes=3000001, streams=3, start="3s"),
        flow("quic", name="up", streams=2, start="7s", stop="11s"),
        duration="12s",
    )
    run = simulate_one(tmp_path, text)
    raw = run / "raw"
    objs = json.loads((raw / "objs-client.json").read_text())["results"]
    assert objs["mode"] == "objects" and objs["complete"] and objs["objects_completed"] == 20, objs
    assert [o["index"] for o in objs["objects"]] == list(range(20))
    assert all(o["size"] == 100_000 and o["ttfb_s"] > 0.02 for o in objs["objects"])
    assert objs["bytes"] == 2_000_000 and objs["error"] is None
    assert objs["goodput_bps"] == pytest.approx(8 * 2_000_000 / objs["completion_s"], rel=1e-6), objs
    assert json.loads((raw / "objs-server.json").read_text())["results"]["connections"][0]["objects_served"] == 20
    multi = json.loads((raw / "multi-client.json").read_text())["results"]
    assert multi["complete"] and multi["stream_bytes"] == [1_000_001, 1_000_000, 1_000_000], multi
    assert multi["goodput_bps"] == pytest.approx(8 * 3_000_001 / multi["completion_s"], rel=1e-6), multi
    up = json.loads((raw / "up-server.json").read_text())["results"]["connections"][0]
    a, b = up["stream_bytes"]
    assert a + b == up["bytes"] > 0.9 * 10e6 / 8 * 4 and abs(a - b) < 0.1 * (a + b), up
    m = json.loads((run / "metrics.json").read_text())
    assert m["flows"]["objs"]["complete"] and m["flows"]["multi"]["complete"]
