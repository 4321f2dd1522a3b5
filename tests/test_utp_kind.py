"""The utp flow kind without namespaces: which scenario fields it takes and refuses
(naming file, flow and field), the agent command lines it plans, the content both ends
derive, and the agent's own refusal of bad arguments."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from scenario_text import flow, link, scenario
from transportlab.kinds import Files, kind
from transportlab.plan.resolve import resolve
from transportlab.scenario import ScenarioError, load_scenario
from transportlab.utp_agent.content import BULK_PIECE_LENGTH, Content, bulk_size


def dl_scenario(flow_lines: str, protocol: str = "utp") -> str:
    """One download "dl" with `flow_lines` over 10 Mbit/s, 10 ms each way."""
    return scenario(
        "t",
        link({"rate": "10Mbit", "delay": "10ms"}, {"rate": "10Mbit", "delay": "10ms"}),
        flow(protocol, name="dl", direction="download", extra=flow_lines),
        duration="20s",
    )


def write(tmp_path: Path, flow: str) -> Path:
    path = tmp_path / "s.toml"
    path.write_text(dl_scenario(flow))
    return path


def refused(tmp_path: Path, flow: str) -> str:
    path = write(tmp_path, flow)
    with pytest.raises(ScenarioError) as e:
        load_scenario(path)
    message = str(e.value)
    assert str(path) in message
    return message


def test_a_libtorrent_flow_loads_with_its_parameters(tmp_path):
    s = load_scenario(
        write(tmp_path, 'implementation = "libtorrent"\nbytes = "5MB"\ncc_params = { target = 50, gain = 1500 }')
    )
    f = s.flows[0]
    assert (f.protocol, f.implementation, f.cc, f.cc_params) == (
        "utp",
        "libtorrent",
        "ledbat",
        {"target": 50, "gain": 1500},
    )


@pytest.mark.parametrize(
    ("flow", "expected"),
    [
        ('bytes = "5MB"', r"flows\.dl\.implementation: a utp flow names its implementation: one of libtorrent, libutp"),
        ('implementation = "utorrent"', r"flows\.dl\.implementation: not a uTP implementation; .* \(got 'utorrent'\)"),
        (
            'implementation = "libutp"\ncc_params = { loss_multiplier = 50 }',
            r"flows\.dl\.cc_params\.loss_multiplier: not a uTP parameter libutp exposes \(it takes target, gain\)"
            r" \(got 50\)",
        ),
        (
            'implementation = "libutp"\ncc_params = { target = 10001 }',
            r"flows\.dl\.cc_params\.target: libutp's target is 1 to 10000 ms \(got 10001\)",
        ),
        (
            'implementation = "libutp"\ncc_params = { gain = 0 }',
            r"flows\.dl\.cc_params\.gain: libutp's gain is 1 to 1000000 bytes \(got 0\)",
        ),
        (
            'implementation = "libutp"\ncc_params = { target = "25ms" }',
            r"flows\.dl\.cc_params\.target: libutp's target is a whole number \(ms\) \(got '25ms'\)",
        ),
        (
            'implementation = "libutp"\nmss = 500',
            r"flows\.dl\.mss: libutp's mss \(its UDP datagram size, uTP header included\) is 576 to 1472 bytes"
            r" \(got 500\)",
        ),
        ('implementation = "libutp"\nmss = 1473', r"flows\.dl\.mss: libutp's mss .* 576 to 1472 bytes \(got 1473\)"),
        (
            'implementation = "libtorrent"\ncc_params = { target = 0 }',
            r"flows\.dl\.cc_params\.target: libtorrent's target is 1 to 10000 ms \(got 0\)",
        ),
        (
            'implementation = "libtorrent"\ncc_params = { gain = 1.5 }',
            r"flows\.dl\.cc_params\.gain: libtorrent's gain is a whole number",
        ),
        (
            'implementation = "libtorrent"\ncc_params = { packet_size = 1000 }',
            r"flows\.dl\.cc_params\.packet_size: not a uTP parameter libtorrent exposes \(it takes target, gain",
        ),
        ('implementation = "libtorrent"\nmss = 1000', r"flows\.dl\.mss: libtorrent's uTP finds its packet size"),
        ('implementation = "libtorrent"\ncc = "cubic"', r"flows\.dl\.cc: uTP runs LEDBAT: cc is ledbat"),
        ('implementation = "libtorrent"\ntls = true', r"flows\.dl\.tls: tls is not a field of utp flows"),
    ],
)
def test_bad_utp_fields_are_refused_naming_the_flow_and_field(tmp_path, flow, expected):
    assert re.search(expected, refused(tmp_path, flow))


def test_implementation_on_other_kinds(tmp_path):
    path = tmp_path / "s.toml"
    # tcp names its one implementation, the kernel's (a sweep axis may step to it) …
    path.write_text(dl_scenario('implementation = "linux"', "tcp"))
    assert load_scenario(path).flows[0].implementation == "linux"
    path.write_text(dl_scenario('implementation = "libtorrent"', "tcp"))
    with pytest.raises(
        ScenarioError, match=r"flows\.dl\.implementation: tcp flows are linux \(the kernel.s\) or smoltcp"
    ):
        load_scenario(path)
    # … quic names quinn or a third-party stack (tests/test_quic_stacks.py), udp none.
    path.write_text(dl_scenario('implementation = "quinn"', "udp"))
    with pytest.raises(ScenarioError, match=r"flows\.dl\.implementation: implementation is not a field of udp flows"):
        load_scenario(path)


def test_endpoints_of_a_download_and_of_a_bulk_transfer(tmp_path):
    s = load_scenario(write(tmp_path, 'implementation = "libtorrent"\nbytes = "5MB"\ncc_params = { target = 50 }'))
    (f,) = resolve(s).flows
    ends = kind("utp").endpoints(f, "10.0.0.2", Files.of(tmp_path, "dl"), 27.0)
    assert ends.server[:4] == [sys.executable, "-m", "transportlab.utp_agent", "server"]
    assert ends.server[ends.server.index("--role") + 1] == "sender"
    assert ends.client[ends.client.index("--role") + 1] == "receiver"
    for argv in (ends.server, ends.client):
        assert argv[argv.index("--bytes") + 1] == "5000000"
        assert argv[argv.index("--content-seed") + 1] == str(f.seed)
        assert "target=50" in argv
    assert ends.client[ends.client.index("--connect") + 1] == f"10.0.0.2:{f.port}"

    s = load_scenario(write(tmp_path, 'implementation = "libtorrent"\nstop = "10s"'))
    (f,) = resolve(s).flows
    ends = kind("utp").endpoints(f, "10.0.0.2", Files.of(tmp_path, "dl"), 27.0)
    assert "--content-seed" not in ends.client
    assert ends.client[ends.client.index("--duration") + 1] == "10000000000ns"
    assert int(ends.client[ends.client.index("--bytes") + 1]) == bulk_size(10.0)


def test_libutp_endpoints_are_the_agent_binarys(tmp_path):
    s = load_scenario(write(tmp_path, 'implementation = "libutp"\nbytes = "5MB"'))
    (f,) = resolve(s).flows
    ends = kind("utp").endpoints(f, "10.0.0.2", Files.of(tmp_path, "dl"), 27.0)
    assert ends.server[1:4] == ["utp-server", "--bind", f"0.0.0.0:{f.port}"]
    assert ends.client[1:4] == ["utp-client", "--connect", f"10.0.0.2:{f.port}"]
    assert ends.client[ends.client.index("--direction") + 1] == "download"
    assert ends.client[ends.client.index("--bytes") + 1] == "5000000"
    for argv in (ends.server, ends.client):
        assert "--cc-param" not in argv and "--datagram-size" not in argv


def test_libutp_parameters_reach_both_agent_ends(tmp_path):
    s = load_scenario(
        write(tmp_path, 'implementation = "libutp"\nbytes = "5MB"\nmss = 700\ncc_params = { target = 25, gain = 1500 }')
    )
    (f,) = resolve(s).flows
    assert (f.cc_params, f.mss) == ({"target": 25, "gain": 1500}, 700)
    ends = kind("utp").endpoints(f, "10.0.0.2", Files.of(tmp_path, "dl"), 27.0)
    for argv in (ends.server, ends.client):
        pairs = [argv[i + 1] for i, a in enumerate(argv) if a == "--cc-param"]
        assert pairs == ["gain=1500", "target=25"]
        assert argv[argv.index("--datagram-size") + 1] == "700"


def test_the_libutp_agent_refuses_a_bad_parameter_naming_it(tmp_path):
    from transportlab.kinds.base import agent_binary

    for bad, message in (
        (["--cc-param", "target=0"], "--cc-param target=0: libutp's target is 1 to 10000 ms"),
        (["--cc-param", "loss_multiplier=5"], "--cc-param loss_multiplier: libutp takes target and gain"),
        (["--datagram-size", "575"], "--datagram-size 575: libutp's datagram size is 576 to 1472 bytes"),
    ):
        res = subprocess.run(
            [agent_binary(), "utp-client", "--connect", "127.0.0.1:1", "--bytes", "1000", *bad]
            + ["--summary", str(tmp_path / "s.json")],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert res.returncode == 2, res.stderr
        assert message in res.stderr


def test_content_is_deterministic_and_bulk_is_whole_pieces():
    import libtorrent as lt

    a, b, c = Content(600_000, 7), Content(600_000, 7), Content(600_000, 8)
    assert a.piece_hashes() == b.piece_hashes() != c.piece_hashes()
    assert lt.torrent_info(a.torrent(lt)).info_hashes().v1 == lt.torrent_info(b.torrent(lt)).info_hashes().v1
    assert a.num_pieces == 3
    assert bulk_size(1.0) % BULK_PIECE_LENGTH == 0 and bulk_size(1.0) >= 1e9 / 8
    assert bulk_size(0.001) == BULK_PIECE_LENGTH


def test_the_agent_refuses_a_bad_parameter_naming_it(tmp_path):
    res = subprocess.run(
        [sys.executable, "-m", "transportlab.utp_agent", "client", "--connect", "127.0.0.1:1"]
        + ["--implementation", "libtorrent", "--role", "receiver", "--bytes", "1000", "--content-seed", "1"]
        + ["--cc-param", "target=0", "--summary", str(tmp_path / "s.json")],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert res.returncode == 2
    assert "cc_params.target: 1 to 10000 ms (got 0)" in res.stderr


def test_a_stray_connection_closing_does_not_end_the_served_transfer():
    """A 5 % loss run's failure: the client's repeated connects left the server a second
    connection that never completed the BitTorrent handshake (no peer id); libtorrent timed
    it out 10 s later, and the server took that for its peer leaving. Now such a close is
    recorded, the transfer goes on, and the real peer's close still ends it."""
    from types import SimpleNamespace

    from transportlab.utp_agent.transfer import Job, State, _done, _on_alert

    class Alert:
        def __init__(self, message: str, peer_id_zero: bool) -> None:
            self.pid = SimpleNamespace(is_all_zeros=lambda: peer_id_zero)
            self.error = SimpleNamespace(category=lambda: SimpleNamespace(name=lambda: "libtorrent"), value=lambda: 0)
            self._message = message

        def message(self) -> str:
            return self._message

    class Other:
        pass

    others = ("session_stats", "torrent_finished", "peer_connect", "performance", "torrent_error", "file_error")
    lt = SimpleNamespace(peer_disconnected_alert=Alert, **{f"{name}_alert": Other for name in others})
    job = Job("server", "sender", Content(10_000_000, 7), False, {}, "0.0.0.0:5201", None, None, 10**10, 10**7)
    st = State(start_ns=0, connected_ns=1)
    _on_alert(lt, Alert("------ peer 198.18.0.1:40409 disconnecting (uTP): timed out", True), job, st)
    assert st.stray_disconnects == ["------ peer 198.18.0.1:40409 disconnecting (uTP): timed out"]
    assert st.peer_left is None and not _done(job, st, 2)
    _on_alert(lt, Alert("df6472 peer 198.18.0.1:40409 disconnecting (uTP): end of file", False), job, st)
    assert st.peer_left is not None and _done(job, st, 3)
