"""Third-party QUIC stacks as quic flows' `implementation` (docs/stacks.md): what a
scenario may ask of each, the command lines of their ends, and the one qlog reader on
hand-made qlogs whose series were worked out by hand."""

import json
import re
from pathlib import Path

import pyarrow.ipc
import pytest

from one_flow import load_one_flow
from transportlab.artefacts import qlog as Q
from transportlab.kinds import Files, kind
from transportlab.plan.resolve import resolve
from transportlab.scenario import ScenarioError

LINK = 'rate = "10Mbit", delay = "10ms"'


def load(tmp_path, flow: str):
    return load_one_flow(tmp_path / "s.toml", flow, name="dl", protocol="quic", forward=LINK, reverse=LINK)


def refused(tmp_path, flow: str) -> str:
    with pytest.raises(ScenarioError) as info:
        load(tmp_path, flow)
    return str(info.value)


@pytest.mark.parametrize(
    "implementation, cc, expected",
    [
        ("quic-go", None, "newreno"),
        ("aioquic", None, "newreno"),
        ("aioquic", "cubic", "cubic"),
        ("ngtcp2", None, "cubic"),
        ("ngtcp2", "bbr2", "bbr2"),
    ],
)
def test_each_stack_runs_its_own_controllers(tmp_path, implementation, cc, expected):
    flow = f'implementation = "{implementation}"\nbytes = "1MB"\ndirection = "download"'
    s = load(tmp_path, flow + (f'\ncc = "{cc}"' if cc else ""))
    f = s.flows[0]
    assert (f.implementation, f.cc, f.application) == (implementation, expected, "http3")


@pytest.mark.parametrize(
    "flow, expected",
    [
        ('implementation = "quic-go"\ncc = "cubic"', r"flows\.dl\.cc: quic-go has no cubic; it offers newreno"),
        ('implementation = "aioquic"\ncc = "bbr"', r"flows\.dl\.cc: aioquic has no bbr; it offers newreno, cubic"),
        (
            'implementation = "ngtcp2"\ncc = "vegas"',
            r"flows\.dl\.cc: ngtcp2 has no vegas; it offers newreno, cubic, bbr, bbr2",
        ),
        ('implementation = "quinn"\ncc = "bbr2"', r"flows\.dl\.cc: unknown QUIC congestion control"),
        (
            'implementation = "msquic"',
            r"flows\.dl\.implementation: not a QUIC implementation; expected one of quinn, quic-go, aioquic, ngtcp2",
        ),
        ('implementation = "aioquic"\nstreams = 4', r"flows\.dl\.streams: streams is a field of quinn's flows"),
        (
            'implementation = "ngtcp2"\nrcvbuf = "32MiB"',
            r"flows\.dl\.rcvbuf: ngtcp2's socket buffer cannot be set by the lab \(quinn, aioquic can\)",
        ),
        ('implementation = "ngtcp2"\nmss = 1000', r"flows\.dl\.mss: a quic mss \(datagram size\) is 1200 to 1472"),
        (
            'implementation = "quic-go"\ncc_params = { beta = 0.5 }',
            r"flows\.dl\.cc_params: quic-go's controllers take no parameters",
        ),
        (
            'implementation = "aioquic"\napplication = "http2"',
            r'flows\.dl\.application: aioquic carries HTTP/3: application is "http3"',
        ),
        (
            'application = "http3"',
            r'flows\.dl\.application: quinn\'s ends are the lab\'s agents: application is "agent"',
        ),
        ('implementation = "aioquic"\napplication = "agent"', r"flows\.dl\.application: aioquic carries HTTP/3"),
        ('implementation = "quic-go"\nqlog = false', r"flows\.dl\.qlog: quic-go's series come from its qlog"),
        ("pacing = false", r"flows\.dl\.pacing: quinn paces every connection and has no switch.*aioquic can"),
        ('implementation = "ngtcp2"\npacing = false', r"flows\.dl\.pacing: ngtcp2's pacer cannot be switched off"),
        (
            'implementation = "ngtcp2"\ndirection = "upload"',
            r"flows\.dl\.direction: ngtcp2's client uploads a file: give bytes",
        ),
    ],
)
def test_what_a_stack_cannot_do_is_refused_naming_flow_and_field(tmp_path, flow, expected):
    assert re.search(expected, refused(tmp_path, flow))


def test_stack_ends_are_the_stack_end_module_with_a_give_up_before_the_runners_grace(tmp_path):
    s = load(
        tmp_path,
        'implementation = "ngtcp2"\ncc = "bbr"\nbytes = "2MB"\ndirection = "upload"\nstart = "1s"\nmss = 1280\nrcvbuf = "default"',
    )
    (f,) = resolve(s).flows
    ends = kind("quic").endpoints(f, "10.0.0.2", Files.of(tmp_path, "dl"), 10.0 + 7.0)
    assert ends.server[1:3] == ["-m", "transportlab.stacks"] and "quic-server" in ends.server
    assert ends.client[ends.client.index("--implementation") + 1] == "ngtcp2"
    assert ends.client[ends.client.index("--cc") + 1] == "bbr"
    assert ends.client[ends.client.index("--bytes") + 1] == "2000000"
    assert ends.client[ends.client.index("--direction") + 1] == "upload"
    # mss is the datagram size at both ends, as quinn's.
    assert ends.client[ends.client.index("--datagram-size") + 1] == "1280"
    assert ends.server[ends.server.index("--datagram-size") + 1] == "1280"
    # The scenario ends at 10 s, the client starts at 1 s, the runner's grace is 5 s:
    # the stack end gives up 11.5 s after its start, 2.5 s before the runner would stop it.
    assert float(ends.client[ends.client.index("--give-up") + 1]) == pytest.approx(11.5)
    assert ends.server[ends.server.index("--qlog") + 1] == str(tmp_path / "dl-server.sqlog")


def test_an_unpaced_aioquic_flow_switches_the_pacer_off_at_both_ends(tmp_path):
    s = load(tmp_path, 'implementation = "aioquic"\nbytes = "1MB"\npacing = false')
    (f,) = resolve(s).flows
    ends = kind("quic").endpoints(f, "10.0.0.2", Files.of(tmp_path, "dl"), 17.0)
    assert "--no-pacing" in ends.server and "--no-pacing" in ends.client


def test_an_aioquic_flows_rcvbuf_reaches_its_endpoint_at_both_ends(tmp_path):
    import argparse

    from transportlab.stacks import quic_end
    from transportlab.stacks.quic import STACKS

    s = load(tmp_path, 'implementation = "aioquic"\nbytes = "1MB"\nrcvbuf = "32MiB"')
    (f,) = resolve(s).flows
    ends = kind("quic").endpoints(f, "10.0.0.2", Files.of(tmp_path, "dl"), 17.0)
    # Half of it asked for, as quinn's agent is: the kernel doubles the request.
    for end in (ends.server, ends.client):
        assert end[end.index("--rcvbuf") + 1] == str(16 * 2**20)
    args = argparse.Namespace(cc="newreno", pacing=True, rcvbuf=16 * 2**20, datagram_size=None, direction="download")
    args.duration = None
    aioquic = STACKS["aioquic"]
    server = quic_end.server_argv(args, aioquic, "0.0.0.0", 4433, tmp_path / "c", tmp_path / "k", tmp_path)
    client = quic_end.client_argv(aioquic, args, "https://10.0.0.2:4433/1000", tmp_path, tmp_path)
    for argv in (server, client):
        assert argv[argv.index("--rcvbuf") + 1] == str(16 * 2**20)


def test_the_stack_end_refuses_a_socket_buffer_a_stack_cannot_take(tmp_path, capsys):
    from transportlab.stacks.__main__ import main

    argv = ["quic-client", "--implementation", "ngtcp2", "--cc", "cubic", "--summary", str(tmp_path / "s.json")]
    argv += ["--connect", "10.0.0.2:4433", "--give-up", "5", "--bytes", "1000", "--rcvbuf", "1000000"]
    assert main(argv) == 2
    assert "ngtcp2's socket buffer cannot be set" in capsys.readouterr().err


def test_aioquic_endpoint_sets_the_socket_buffer_asked_for_above_rmem_max(tmp_path):
    import asyncio
    import socket

    from aioquic.quic.connection import QuicConnection

    from transportlab.stacks.aioquic_endpoint import Endpoint, configuration

    rmem_max = int(Path("/proc/sys/net/core/rmem_max").read_text())
    ask = 4 * rmem_max

    async def made() -> int:
        loop = asyncio.get_running_loop()
        conn = QuicConnection(configuration=configuration(True, "reno", None, None))
        transport, _ = await loop.create_datagram_endpoint(
            lambda: Endpoint(conn, rcvbuf=ask), local_addr=("127.0.0.1", 0)
        )
        try:
            return transport.get_extra_info("socket").getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF)
        finally:
            transport.close()

    # The kernel doubles a request (bookkeeping overhead); rmem_max would have capped SO_RCVBUF.
    assert asyncio.run(made()) == 2 * ask


def burst_after_handshake(tmp_path, pacing: bool) -> int:
    """Datagrams an aioquic server (the lab's endpoint) sends at one instant once it has
    a stream's worth of data, after a handshake over a 50 ms round trip in virtual time."""
    import asyncio

    from aioquic.quic.connection import QuicConnection

    from transportlab.stacks.aioquic_endpoint import Endpoint, configuration
    from transportlab.stacks.tls import self_signed

    cert, key = self_signed(tmp_path)
    client = QuicConnection(configuration=configuration(True, "reno", None, None))
    server_config = configuration(False, "reno", None, None)
    server_config.load_cert_chain(cert, key)
    server = QuicConnection(
        configuration=server_config, original_destination_connection_id=client.original_destination_connection_id
    )

    async def wrap() -> None:
        Endpoint(server, pacing=pacing)  # installs the pacer the flow asked for

    asyncio.run(wrap())
    now, addr = 0.0, ("10.0.0.1", 4433)
    client.connect(addr, now=now)
    for _ in range(4):  # the handshake, one round trip a step
        for data, _ in client.datagrams_to_send(now=now):
            server.receive_datagram(data, addr, now=now + 0.025)
        now += 0.025
        for data, _ in server.datagrams_to_send(now=now):
            client.receive_datagram(data, addr, now=now + 0.025)
        now += 0.025
    stream = client.get_next_available_stream_id()
    client.send_stream_data(stream, b"GET", end_stream=False)
    for data, _ in client.datagrams_to_send(now=now):
        server.receive_datagram(data, addr, now=now + 0.025)
    now += 0.025
    server.send_stream_data(stream, b"x" * 1_000_000)
    return len(server.datagrams_to_send(now=now))


def test_aioquic_unpaced_sends_its_window_at_once_and_paced_does_not(tmp_path):
    # The initial window is 10 datagrams; aioquic's pacer lets out a burst of a quarter
    # of it (at least two datagrams) and spaces the rest at cwnd / srtt.
    unpaced = burst_after_handshake(tmp_path, pacing=False)
    paced = burst_after_handshake(tmp_path, pacing=True)
    assert unpaced >= 10 and paced <= 4, (unpaced, paced)


def test_a_bulk_stack_flow_is_a_download_for_its_duration(tmp_path):
    s = load(tmp_path, 'implementation = "quic-go"\ndirection = "download"\nstop = "4s"')
    (f,) = resolve(s).flows
    ends = kind("quic").endpoints(f, "10.0.0.2", Files.of(tmp_path, "dl"), 17.0)
    assert ends.client[ends.client.index("--duration") + 1] == "4" and "--bytes" not in ends.client


# --- the qlog reader --------------------------------------------------------------------

RS = "\x1e"


def seq(header: dict, events: list[dict]) -> str:
    return "".join(RS + json.dumps(r) + "\n" for r in [header, *events])


def test_json_seq_qlog_to_series_by_hand(tmp_path):
    """quic-go's shape: a wall-clock reference in the header, ms event times."""
    header = {
        "qlog_format": "JSON-SEQ",
        "trace": {
            "vantage_point": {"type": "server"},
            "common_fields": {
                "reference_time": {"clock_type": "monotonic", "wall_clock_time": "2026-01-01T00:00:00.000000500Z"}
            },
        },
    }
    events = [
        {"time": 0.0, "name": "recovery:congestion_state_updated", "data": {"new": "slow_start"}},
        {"time": 1.0, "name": "transport:packet_sent", "data": {}},
        {
            "time": 2.5,
            "name": "recovery:metrics_updated",
            "data": {"congestion_window": 12000, "bytes_in_flight": 1200},
        },
        {
            "time": 12.0,
            "name": "recovery:metrics_updated",
            "data": {"smoothed_rtt": 20.5, "min_rtt": 20.0, "bytes_in_flight": 2400},
        },
        {"time": 15.0, "name": "recovery:packet_lost", "data": {}},
        {"time": 15.0, "name": "recovery:congestion_state_updated", "data": {"new": "recovery"}},
        {"time": 15.0, "name": "recovery:metrics_updated", "data": {"congestion_window": 6000}},
        {"time": 25.0, "name": "recovery:congestion_state_updated", "data": {"new": "congestion_avoidance"}},
    ]
    path = tmp_path / "q.sqlog"
    path.write_text(seq(header, events))
    (trace,) = Q.read_traces(path)
    epoch = 1767225600 * 10**9 + 500
    assert trace.reference_epoch_ns == epoch and trace.vantage_point == "server"
    # CLOCK_REALTIME − CLOCK_MONOTONIC = epoch − 1e9: qlog time 0 is monotonic 1 s.
    s = Q.series(trace, Q.QlogClock(epoch_minus_monotonic_ns=epoch - 10**9))
    # Events changing a column from 1 ms to 15 ms: rows at 1, 11, (21 ≥ last) and the last (15 ms).
    assert list(s["t_ns"]) == [10**9 + 1_000_000, 10**9 + 11_000_000, 10**9 + 15_000_000]
    assert list(s["cwnd_bytes"].astype("Int64").fillna(-1)) == [-1, 12000, 6000]
    assert list(s["bytes_in_flight"].astype("Int64").fillna(-1)) == [-1, 1200, 2400]
    assert list(s["srtt_us"].astype("Int64").fillna(-1)) == [-1, -1, 20500]
    assert list(s["min_rtt_us"].astype("Int64").fillna(-1)) == [-1, -1, 20000]
    assert list(s["lost_packets"]) == [0, 0, 1]
    assert list(s["congestion_events"]) == [0, 0, 1]
    assert list(s["packets_sent"]) == [1, 1, 1]


def test_aioquic_json_qlog_and_what_a_stack_cannot_say(tmp_path):
    """aioquic's shape as its own QuicLogger writes it: one JSON document, absolute
    epoch-ms times, draft-01 `cwnd`; it logs no congestion states, so that column is
    empty, not zero."""
    doc = {
        "qlog_format": "JSON",
        "traces": [
            {
                "vantage_point": {"type": "client"},
                "events": [
                    {"time": 5000.0, "name": "recovery:metrics_updated", "data": {"cwnd": 13500, "bytes_in_flight": 0}},
                    {
                        "time": 5004.0,
                        "name": "recovery:metrics_updated",
                        "data": {"latest_rtt": 4.0, "smoothed_rtt": 4.0, "min_rtt": 4.0},
                    },
                ],
            }
        ],
    }
    path = tmp_path / "a.qlog"
    path.write_text(json.dumps(doc))
    (trace,) = Q.read_traces(path)
    # Epoch ms 5000 is monotonic 5000 ms − 1000 ms = 4 s.
    s = Q.series(
        trace, Q.QlogClock(epoch_minus_monotonic_ns=10**9, absolute_epoch_times=True), silent=("congestion_events",)
    )
    assert list(s["t_ns"]) == [4 * 10**9, 4 * 10**9 + 4_000_000]
    assert list(s["cwnd_bytes"]) == [13500, 13500]
    assert list(s["srtt_us"].astype("Int64").fillna(-1)) == [-1, 4000]
    assert s["congestion_events"].isna().all()
    assert list(s["lost_packets"]) == [0, 0]


def test_a_qlog_without_reference_needs_one_and_a_cut_record_is_skipped(tmp_path):
    """ngtcp2's shape: relative times, no reference; its last record may be cut short."""
    path = tmp_path / "n.sqlog"
    text = seq(
        {"qlog_format": "JSON-SEQ", "trace": {"vantage_point": {"type": "client"}}},
        [{"time": 3, "name": "recovery:metrics_updated", "data": {"congestion_window": 14520, "smoothed_rtt": 21}}],
    )
    path.write_text(text + RS + '{"time": 4, "name": "recov')
    (trace,) = Q.read_traces(path)
    with pytest.raises(Q.QlogError, match="no reference time"):
        Q.series(trace, Q.QlogClock(epoch_minus_monotonic_ns=0))
    s = Q.series(trace, Q.QlogClock(monotonic_ns=7_000_000))
    assert list(s["t_ns"]) == [10_000_000] and list(s["srtt_us"]) == [21000]
    path.write_text("")
    with pytest.raises(Q.QlogError, match="no qlog records"):
        Q.read_traces(path)


def test_a_runs_stack_qlogs_become_its_series_once_at_analysis(tmp_path):
    """The stack end leaves each qlog with a clock sidecar; the series file is made from
    them (connection n from `-n`) the first time the metrics ask, then read as it is."""
    header = {"qlog_format": "JSON-SEQ", "trace": {"vantage_point": {"type": "server"}}}
    for n, name in enumerate(("dl-server.sqlog", "dl-server-1.sqlog")):
        path = tmp_path / name
        path.write_text(
            seq(
                header, [{"time": 1, "name": "recovery:metrics_updated", "data": {"congestion_window": 1000 * (n + 1)}}]
            )
        )
        Q.write_clock(path, Q.QlogClock(monotonic_ns=5_000_000 * (n + 1)), ("congestion_events",))
    assert Q.ensure_series(tmp_path, "dl-client") is None  # no qlog, no series
    out = Q.ensure_series(tmp_path, "dl-server")
    frame = pyarrow.ipc.open_file(out).read_all().to_pandas()
    assert list(frame["conn"]) == [0, 1] and list(frame["t_ns"]) == [6_000_000, 11_000_000]
    assert list(frame["cwnd_bytes"]) == [1000, 2000]
    assert Q.last_values(frame)["cwnd_bytes"] == 1000 and Q.last_values(frame)["congestion_events"] is None
    (tmp_path / "dl-server.sqlog").unlink()
    assert Q.ensure_series(tmp_path, "dl-server") == out  # made once


def test_aioquic_endpoint_streams_each_connections_qlog_while_it_runs(tmp_path):
    """The lab's aioquic endpoint writes a connection's events as JSON-SEQ at each flush
    and holds none of them afterwards, so a stopped server has at most one flush interval
    of events left to write however long its transfer was; a frame list aioquic fills after
    logging its packet is written whole; each connection has its own file, in start order."""
    from transportlab.stacks.aioquic_endpoint import StreamedQlog

    qlog = StreamedQlog(tmp_path / "q", "server")
    first = qlog.start_trace(is_client=False, odcid=b"\x01\x02")
    frames: list[dict] = []
    first.log_event(category="transport", event="packet_received", data={"frames": frames})
    frames.append({"frame_type": "ack"})  # as aioquic does while it reads the packet
    first.log_event(category="recovery", event="metrics_updated", data={"cwnd": 13500, "smoothed_rtt": 20.0})
    qlog.flush()
    assert len(first._events) == 0  # written, not kept
    second = qlog.start_trace(is_client=False, odcid=b"\x03")
    first.log_event(category="recovery", event="packet_lost", data={})
    second.log_event(category="transport", event="packet_sent", data={})
    qlog.end_trace(second)  # a connection's end writes it whole and closes its file
    qlog.close()  # stop: the rest of the connections still open
    qlog.close()
    paths = sorted((tmp_path / "q").iterdir())
    assert [p.name for p in paths] == ["000000_server.sqlog", "000001_server.sqlog"]
    (one,) = Q.read_traces(paths[0])
    (two,) = Q.read_traces(paths[1])
    assert one.vantage_point == "server" and two.vantage_point == "server"
    assert [(name, data) for _, name, data in one.events] == [
        ("transport:packet_received", {"frames": [{"frame_type": "ack"}]}),
        ("recovery:metrics_updated", {"cwnd": 13500, "smoothed_rtt": 20.0}),
        ("recovery:packet_lost", {}),
    ]
    assert [name for _, name, _ in two.events] == ["transport:packet_sent"]
    s = Q.series(one, Q.QlogClock(epoch_minus_monotonic_ns=0, absolute_epoch_times=True))
    assert s["cwnd_bytes"].iloc[-1] == 13500 and s["lost_packets"].iloc[-1] == 1


def test_a_stack_is_killed_before_the_runner_would_kill_its_end():
    """The end waits for its stopped stack less than the runner waits for the end, so it
    always gets to keep the qlogs and write its summary."""
    from transportlab.network.live import STOP_GRACE_S
    from transportlab.stacks.process import STOP_WAIT_S

    assert STOP_WAIT_S + 0.5 <= STOP_GRACE_S


def test_stack_cpu_counts_the_stacks_processes_and_not_what_ran_before():
    import subprocess
    import sys

    # In a process of its own, whose only children are these two (the test runner's other
    # children, reaped meanwhile, would count too). Each child uses 0.2 s of CPU, measured
    # by itself, so the machine's load does not matter.
    script = """
import json, subprocess, sys
from transportlab.stacks.process import stack_cpu
burn = [sys.executable, "-c", "import time\\nt = time.process_time()\\nwhile time.process_time() - t < 0.2: pass"]
subprocess.run(burn, check=True)  # a helper before the stack starts: not the stack's
before = stack_cpu()
subprocess.run(burn, check=True)
print(json.dumps(stack_cpu(before)))
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    cpu = json.loads(out)
    assert 0.2 <= cpu["cpu_user_s"] + cpu["cpu_sys_s"] < 0.4, cpu
