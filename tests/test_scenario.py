"""Scenario files: unit parsing, schema, error messages, overrides, sweeps, lowering."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

import scenario_text as st
from transportlab.plan.resolve import resolve, to_topology
from transportlab.plan.topology import GilbertElliott
from transportlab.scenario import (
    ScenarioError,
    bdp_packets,
    expand,
    format_error,
    load_points,
    load_scenario,
    parse_duration,
    parse_override,
    parse_percentage,
    parse_rate,
    parse_size,
    read_toml,
)

DATA = Path(__file__).parent / "data" / "scenarios"


def doc(
    *,
    top: str = "",
    duration: str = '"20s"',
    hosts: str = '["client", "server"]',
    fwd: str = 'rate = "10Mbit", delay = "50ms", queue = { packets = 100 }',
    rev: str = 'delay = "50ms"',
    frm: str = "client",
    to: str = "server",
    protocol: str = "tcp",
    flow: str = "",
    extra: str = "",
) -> str:
    """The one-flow scenario the checks below vary, with the raw TOML of each part."""
    bottleneck = st.link(st.Raw(f"{{ {fwd} }}"), st.Raw(f"{{ {rev} }}"))
    bulk = st.flow(protocol, src=frm, dst=to, extra=flow)
    return st.scenario("t", top + "\n", bottleneck, bulk, extra, duration=st.Raw(duration), hosts=st.Raw(hosts))


def write(tmp_path: Path, text: str, name: str = "s.toml") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


# --- units -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, seconds",
    [("10ms", 0.010), ("2s", 2.0), ("500us", 0.0005), ("500µs", 0.0005), ("1.5min", 90.0),
     ("0s", 0.0), ("250ns", 250e-9), ("1h", 3600.0), (" 20 ms ", 0.020)],
)  # fmt: skip
def test_parse_duration(text, seconds):
    assert parse_duration(text) == pytest.approx(seconds, rel=1e-12)


def test_parse_duration_bare_number_only_when_allowed():
    with pytest.raises(ValueError, match="needs a unit"):
        parse_duration(5)
    assert parse_duration(5, allow_bare=True) == 5.0


@pytest.mark.parametrize("bad", ["10", "10 potatoes", "ms", "-1ms", "1e", True, None, [1]])
def test_parse_duration_rejects(bad):
    with pytest.raises(ValueError, match="duration"):
        parse_duration(bad)


@pytest.mark.parametrize(
    "text, bps",
    [("5Mbit", 5e6), ("1Gbit", 1e9), ("600kbit", 600e3), ("100bit", 100.0), ("10Mbps", 10e6),
     ("10Mbit/s", 10e6), ("10mbit", 10e6), ("2.5Gbit", 2.5e9), ("5.76Mbit", 5.76e6), ("1kbps", 1e3)],
)  # fmt: skip
def test_parse_rate(text, bps):
    assert parse_rate(text) == bps


@pytest.mark.parametrize("bad", ["10", "10MB", "10MBps", "10mbps", "0Mbit", "fast", 10e6])
def test_parse_rate_rejects(bad):
    with pytest.raises(ValueError, match="rate"):
        parse_rate(bad)


@pytest.mark.parametrize(
    "value, nbytes",
    [("10MB", 10_000_000), ("64KiB", 65536), (1448, 1448), ("1448B", 1448), ("1.5KiB", 1536),
     ("100KB", 100_000), ("1GB", 10**9), ("2MiB", 2 * 2**20), ("0B", 0)],
)  # fmt: skip
def test_parse_size(value, nbytes):
    assert parse_size(value) == nbytes


@pytest.mark.parametrize("bad", ["1448", "10Mbit", "0.5B", -1, 1.5, "ten"])
def test_parse_size_rejects(bad):
    with pytest.raises(ValueError):
        parse_size(bad)


@pytest.mark.parametrize(
    "value, p", [("0.1%", 0.001), ("5%", 0.05), ("100%", 1.0), ("0%", 0.0), (0.25, 0.25), (0, 0.0), (1, 1.0)]
)
def test_parse_percentage(value, p):
    assert parse_percentage(value) == p


@pytest.mark.parametrize("bad", ["150%", "-1%", 1.5, "0.1", "lots"])
def test_parse_percentage_rejects(bad):
    with pytest.raises(ValueError, match="percentage"):
        parse_percentage(bad)


# --- BDP queues ----------------------------------------------------------------------


def test_bdp_packets_by_hand():
    # 10 Mbit/s × 100 ms = 1e6 bit = 125000 B = 83.33 packets of 1500 B → 84.
    assert bdp_packets(10e6, 0.100, 1) == 84
    # S0 E3: 5 Mbit/s, RTT 100 ms, q = BDP·5 → 208.33 → 209.
    assert bdp_packets(5e6, 0.100, 5) == 209
    # Exactly 100 packets stays 100 despite float noise.
    assert bdp_packets(12e6, 0.100, 1) == 100
    # Never below one packet.
    assert bdp_packets(1e3, 0.001, 0.1) == 1


def test_bdp_queue_uses_link_rtt_and_rtt_override(tmp_path):
    text = doc(fwd='rate = "10Mbit", delay = "50ms", queue = { bdp = 1 }')
    topo = to_topology(load_scenario(write(tmp_path, text)))
    assert topo.links[0].forward.queue_packets == 84  # RTT = 50 ms + 50 ms
    text = doc(fwd='rate = "10Mbit", delay = "5ms", queue = { bdp = 2, rtt = "100ms" }', rev="")
    topo = to_topology(load_scenario(write(tmp_path, text)))
    assert topo.links[0].forward.queue_packets == math.ceil(10e6 * 0.1 * 2 / 8 / 1500)


# --- bad inputs: each message names the file, the field path and the value ------------

TRACE_BAD = "1\n2\nabc\n4\n"

BAD = [
    # id, document, overrides, path in the message, value in the message
    ("unknown top-level key", doc(top='colour = "blue"'), [], "colour", "'blue'"),
    ("unknown key in a link direction", doc(fwd='rate = "10Mbit", rte = "1Mbit"'), [],
     "links.bottleneck.forward.rte", "'1Mbit'"),
    ("bad rate unit", doc(fwd='rate = "10 potatoes"'), [], "links.bottleneck.forward.rate", "'10 potatoes'"),
    ("byte rate", doc(fwd='rate = "10MBps"'), [], "links.bottleneck.forward.rate", "'10MBps'"),
    ("negative delay", doc(rev='delay = "-5ms"'), [], "links.bottleneck.reverse.delay", "'-5ms'"),
    ("loss over 100%", doc(fwd='rate = "10Mbit", loss = "150%"'), [], "links.bottleneck.forward.loss", "'150%'"),
    ("gilbert-elliott p over 100%", doc(fwd='loss = { gilbert_elliott = { p = "200%", r = "10%" } }'), [],
     "links.bottleneck.forward.loss.gilbert_elliott.p", "'200%'"),
    ("unknown host in flow", doc(to="nobody"), [], "flows.bulk.to", "'nobody'"),
    ("flow from == to", doc(to="client"), [], "flows.bulk.to", "'client'"),
    ("duplicate host", doc(hosts='["client", "server", "client"]'), [], "hosts[2]", "'client'"),
    ("duplicate link name",
     doc(extra='[[links]]\nname = "bottleneck"\nbetween = ["server", "client"]'), [], "links[1].name", "'bottleneck'"),
    ("kernel lacks cc", doc(flow='cc = "westwood"'), [], "flows.bulk.cc", "'westwood'"),
    ("unknown cc", doc(flow='cc = "turbo"'), [], "flows.bulk.cc", "'turbo'"),
    ("start after duration", doc(flow='start = "30s"'), [], "flows.bulk.start", "'30s'"),
    ("stop before start", doc(flow='start = "5s"\nstop = "2s"'), [], "flows.bulk.stop", "'2s'"),
    ("stop after duration", doc(flow='stop = "25s"'), [], "flows.bulk.stop", "'25s'"),
    ("bytes and stop both set", doc(flow='stop = "10s"\nbytes = "10MB"'), [], "flows.bulk.bytes", "'10MB'"),
    ("queue with two kinds", doc(fwd='rate = "10Mbit", queue = { packets = 10, bytes = "15kB" }'), [],
     "links.bottleneck.forward.queue", "packets = 10"),
    ("queue without a rate", doc(fwd='delay = "1ms", queue = { packets = 10 }'), [],
     "links.bottleneck.forward.queue", "packets = 10"),
    ("bdp queue on a link without delay", doc(fwd='rate = "10Mbit", queue = { bdp = 1 }', rev=""), [],
     "links.bottleneck.forward.queue", "bdp = 1"),
    ("bad distribution", doc(fwd='jitter = "1ms", distribution = "gaussian"'), [],
     "links.bottleneck.forward.distribution", "'gaussian'"),
    ("sweep over unknown path", doc(extra='[sweep]\n"links.bottleneck.forward.rte" = ["1Mbit"]'), [],
     'sweep."links.bottleneck.forward.rte"', "'rte'"),
    ("sweep over unknown link", doc(extra='[sweep]\n"links.nope.forward.rate" = ["1Mbit"]'), [],
     'sweep."links.nope.forward.rate"', "'nope'"),
    ("bad sweep value", doc(extra='[sweep]\n"links.bottleneck.forward.rate" = ["1Mbit", "fast"]'), [],
     'sweep."links.bottleneck.forward.rate"[1]', "'fast'"),
    ("--set unknown path", doc(), ["flows.nope.cc=reno"], "--set flows.nope.cc=reno", "'nope'"),
    ("--set unknown field", doc(), ["links.bottleneck.forward.speed=1Mbit"], "--set links.bottleneck.forward.speed",
     "'speed'"),
    ("--set bad value", doc(), ["links.bottleneck.forward.rate=10 potatoes"], "links.bottleneck.forward.rate",
     "'10 potatoes'"),
    ("repetitions 0", doc(top="repetitions = 0"), [], "repetitions", "got 0"),
    ("repetitions not an integer", doc(top='repetitions = "5"'), [], "repetitions", "'5'"),
    ("duration without unit", doc(duration="20"), [], "duration", "got 20"),
    ("host not attached", doc(hosts='["client", "server", "lonely"]'), [], "hosts[2]", "'lonely'"),
    ("bad host name", doc(hosts='["client", "server", "Bad-Name"]'), [], "hosts[2]", "'Bad-Name'"),
    ("link to an undeclared node", doc(extra='[[links]]\nname = "side"\nbetween = ["server", "r9"]'), [],
     "links.side.between[1]", "'r9'"),
    ("flow to a router",
     doc(top='routers = ["r1"]', to="r1", extra='[[links]]\nname = "side"\nbetween = ["server", "r1"]'), [],
     "flows.bulk.to", "'r1'"),
    ("no path",
     doc(hosts='["client", "server", "other"]', top='routers = ["r1"]', to="other",
         extra='[[links]]\nname = "side"\nbetween = ["other", "r1"]'), [], "flows.bulk.to", "'other'"),
    ("trace file missing", doc(fwd='trace = "missing.up"'), [], "links.bottleneck.forward.trace", "'missing.up'"),
    ("rate and trace", doc(fwd='rate = "1Mbit", trace = "bad.trace"'), [], "links.bottleneck.forward.trace",
     "'bad.trace'"),
    ("trace_offset without a trace", doc(fwd='rate = "1Mbit", trace_offset = "1s"'), [],
     "links.bottleneck.forward.trace_offset", "needs a trace"),
    ("unknown key in a flow", doc(flow="colour = 1"), [], "flows.bulk.colour", "got 1"),
    ("udp flow without size", doc(protocol="udp", flow='rate = "1Mbit"'), [], "flows.bulk.size", "udp"),
    ("udp-only field on tcp", doc(flow='rate = "1Mbit"'), [], "flows.bulk.rate", "'1Mbit'"),
    ("unknown protocol", doc(protocol="sctp"), [], "flows.bulk.protocol", "'sctp'"),
    ("probe to unknown host", doc(extra='[[probes]]\nfrom = "client"\nto = "nobody"\ninterval = "10ms"'), [],
     "probes[0].to", "'nobody'"),
    ("probe without interval", doc(extra='[[probes]]\nname = "ping"\nfrom = "client"\nto = "server"'), [],
     "probes.ping.interval", "missing"),
    ("sysctls for unknown host", doc(extra='[sysctls.nobody]\n"net.core.rmem_max" = 1'), [], "sysctls.nobody",
     "'nobody'"),
    ("multipath direction with its own rate", doc(fwd='rate = "10Mbit", legs = [{ name = "m", rate = "20Mbit", delay = "10ms" }, { name = "s", rate = "20Mbit", delay = "10ms" }], split = { batch = 10, ratio = 0.5 }'), [],
     "links.bottleneck.forward.rate", "'10Mbit'"),
    ("legs without split", doc(fwd='legs = [{ name = "m", rate = "20Mbit", delay = "10ms" }, { name = "s", rate = "20Mbit", delay = "10ms" }]'), [], "links.bottleneck.forward.split", "needs split"),
    ("split shares do not add up", doc(fwd='legs = [{ name = "m", rate = "20Mbit", delay = "10ms" }, { name = "s", rate = "20Mbit", delay = "10ms" }], split = { batch = 10, shares = [0.5, 0.6] }'), [],
     "links.bottleneck.forward.split.shares", "0.5"),
    ("duplicate split with a batch", doc(fwd='legs = [{ name = "m", rate = "20Mbit", delay = "10ms" }, { name = "s", rate = "20Mbit", delay = "10ms" }], split = { mode = "duplicate", batch = 10 }'), [],
     "links.bottleneck.forward.split.batch", "10"),
    ("merge without legs", doc(fwd='rate = "1Mbit", merge = { enabled = false }'), [], "links.bottleneck.forward.merge",
     "enabled"),
    ("leg queue in bdp without rtt", doc(fwd='legs = [{ name = "m", rate = "20Mbit", queue = { bdp = 1 } }, { name = "s" }], '
     'split = { batch = 10, ratio = 0.5 }'), [], "links.bottleneck.forward.legs.m.queue", "bdp"),
    ("quic message without rate", doc(protocol="quic", flow='size = 1200'), [], "flows.bulk.rate", "exactly one of rate and interval"),
    ("quic messages with bytes", doc(protocol="quic", flow='size = 1200\nrate = "1Mbit"\nbytes = "1MB"'), [],
     "flows.bulk.bytes", "1MB"),
    ("rcvbuf on tcp", doc(flow='rcvbuf = "32MiB"'), [], "flows.bulk.rcvbuf", "32MiB"),
    ("tls on quic", doc(protocol="quic", flow='tls = true'), [], "flows.bulk.tls", "true"),
    ("sysctl read-only in a namespace", doc(extra='[sysctls.client]\n"net.core.rmem_default" = 33554432'), [],
     'sysctls.client."net.core.rmem_default"', "33554432"),
    ("tcp_rmem not three numbers", doc(extra='[sysctls.client]\n"net.ipv4.tcp_rmem" = "4096 131072"'), [],
     'sysctls.client."net.ipv4.tcp_rmem"', "'4096 131072'"),
    ("tcp_rmem one number", doc(extra='[sysctls.server]\n"net.ipv4.tcp_rmem" = 6291456'), [],
     'sysctls.server."net.ipv4.tcp_rmem"', "6291456"),
    ("tcp_rmem of zero", doc(extra='[sysctls.server]\n"net.ipv4.tcp_rmem" = "0 131072 6291456"'), [],
     'sysctls.server."net.ipv4.tcp_rmem"', "'0 131072 6291456'"),
    ("analysis window past the end", doc(extra='[analysis]\nwindow = ["5s", "25s"]'), [], "analysis.window",
     "'25s'"),
    ("duplicate flow name",
     doc(extra='[[flows]]\nname = "bulk"\nfrom = "server"\nto = "client"\nprotocol = "tcp"'), [],
     "flows[1].name", "'bulk'"),
    ("bool as probability", doc(fwd='duplicate = true'), [], "links.bottleneck.forward.duplicate", "true"),
]  # fmt: skip


@pytest.mark.parametrize("case, text, overrides, path, value", BAD, ids=[c[0] for c in BAD])
def test_bad_input_message(tmp_path, case, text, overrides, path, value):
    (tmp_path / "bad.trace").write_text(TRACE_BAD)
    f = write(tmp_path, text)
    with pytest.raises(ScenarioError) as info:
        load_scenario(f, overrides)
    msg = str(info.value)
    assert "\n" not in msg
    assert msg.startswith(f"{f}: "), msg
    assert f": {path}" in msg, msg
    assert value in msg, msg
    assert "Traceback" not in format_error(info.value)


def test_at_least_twenty_distinct_bad_inputs():
    assert len({c[0] for c in BAD}) >= 20


def test_trace_bad_line_names_trace_file_and_line(tmp_path):
    (tmp_path / "bad.trace").write_text(TRACE_BAD)
    f = write(tmp_path, doc(fwd='trace = "bad.trace"'))
    with pytest.raises(ScenarioError) as info:
        load_scenario(f)
    msg = str(info.value)
    assert msg.startswith(f"{f}: links.bottleneck.forward.trace: ")
    assert "bad.trace line 3" in msg and "'abc'" in msg


def test_trace_period_beyond_the_link_models_clock_is_refused_at_load(tmp_path):
    # 2**40 ms is the longest period linkem accepts (its u64 nanosecond times would wrap).
    (tmp_path / "long.trace").write_text(f"1\n{2**40 + 1}\n")
    with pytest.raises(ScenarioError, match=r"links\.bottleneck\.forward\.trace: .*period .* exceeds 1099511627776 ms"):
        load_scenario(write(tmp_path, doc(fwd='trace = "long.trace"')))


def test_toml_syntax_error_is_one_line_with_position(tmp_path):
    f = write(tmp_path, 'name = "t"\nduration = \n')
    with pytest.raises(ScenarioError) as info:
        load_scenario(f)
    msg = str(info.value)
    assert msg.startswith(f"{f}: line 2, column ") and "invalid TOML" in msg and "\n" not in msg


def test_missing_file(tmp_path):
    with pytest.raises(ScenarioError, match="cannot read"):
        load_scenario(tmp_path / "nope.toml")


def test_missing_required_field_has_no_value(tmp_path):
    f = write(tmp_path, doc().replace('duration = "20s"\n', ""))
    with pytest.raises(ScenarioError) as info:
        load_scenario(f)
    assert str(info.value) == f"{f}: duration: missing required field"


def test_unknown_key_lists_the_known_ones(tmp_path):
    f = write(tmp_path, doc(fwd='rate = "10Mbit", rte = "1Mbit"'))
    with pytest.raises(ScenarioError, match=r"expected one of: rate, trace, delay"):
        load_scenario(f)


def test_override_error_is_marked(tmp_path):
    f = write(tmp_path, doc())
    with pytest.raises(ScenarioError, match=r"\(set by --set links.bottleneck.forward.rate\)"):
        load_scenario(f, ["links.bottleneck.forward.rate=fast"])


def test_format_error_lists_every_problem(tmp_path):
    f = write(tmp_path, doc(top='colour = "blue"\nrepetitions = 0', fwd='rate = "fast"'))
    with pytest.raises(ScenarioError) as info:
        load_scenario(f)
    lines = format_error(info.value).splitlines()
    assert len(lines) == 3 and all(line.startswith(f"{f}: ") for line in lines)
    assert format_error(RuntimeError("boom")) == "error: boom"


def test_kernel_cc_messages_name_what_exists():
    from transportlab.scenario import validate

    with pytest.raises(
        ScenarioError, match="this kernel lacks tcp_westwood; kernel TCP offers reno, cubic, bbr, vegas"
    ):
        validate(read_toml_text(doc(flow='cc = "westwood"')))
    with pytest.raises(ScenarioError, match='unknown TCP congestion control.*protocol = "quic"'):
        validate(read_toml_text(doc(flow='cc = "ledbat"')))


def read_toml_text(text: str) -> dict:
    import tomllib

    return tomllib.loads(text)


# --- good inputs -----------------------------------------------------------------------


def test_defaults(tmp_path):
    s = load_scenario(write(tmp_path, doc()))
    assert (s.seed, s.repetitions, s.duration) == (1, 1, 20.0)
    f = s.flows[0]
    assert (f.cc, f.direction, f.start, f.tcp_info_interval) == ("cubic", "upload", 0.0, 0.010)
    assert s.analysis.bin == 0.1 and s.analysis.window is None
    r = resolve(s)
    assert r.flows[0].end == 20.0 and r.analysis.window == (0.0, 20.0)


def test_objects_are_downloads(tmp_path):
    s = load_scenario(write(tmp_path, doc(flow='objects = { count = 10, size = "100KB" }')))
    flow = resolve(s).flows[0]
    assert flow.direction == "download" and flow.objects.count == 10 and flow.objects.size == 100_000
    assert (flow.sender, flow.receiver) == ("server", "client")


def test_quic_is_accepted_and_unknown_kinds_are_refused_at_load(tmp_path):
    text = doc(protocol="quic", flow='cc = "vegas"\ncc_params = { alpha = 2, beta = 4, gamma = 1 }\nstreams = 2')
    s = load_scenario(write(tmp_path, text))
    assert s.flows[0].cc == "vegas" and s.flows[0].cc_params == {"alpha": 2, "beta": 4, "gamma": 1}
    # A kind with no plug-in is refused where the file is read, naming the field, the
    # value and the kinds there are.
    with pytest.raises(
        ScenarioError, match=r"flows\.bulk\.protocol: not a flow kind .*tcp, udp, quic, utp \(got 'sctp'\)"
    ):
        load_scenario(write(tmp_path, doc(protocol="sctp")))


def test_a_field_of_another_kind_names_its_kinds(tmp_path):
    with pytest.raises(
        ScenarioError, match=r"flows\.bulk\.tls: tls is not a field of quic flows \(it is one of tcp flows\)"
    ):
        load_scenario(write(tmp_path, doc(protocol="quic", flow="tls = true")))
    with pytest.raises(ScenarioError, match=r"flows\.bulk\.direction: udp flows send from `from` to `to`"):
        load_scenario(write(tmp_path, doc(protocol="udp", flow='size = 1200\nrate = "1Mbit"\ndirection = "download"')))


def test_parse_override_values():
    assert parse_override("seed=3") == ("seed", 3)
    assert parse_override("duration=10s") == ("duration", "10s")
    assert parse_override('flows.bulk.cc = "reno"') == ("flows.bulk.cc", "reno")
    assert parse_override("x=[1, 2]") == ("x", [1, 2])
    assert parse_override("q={packets = 5}") == ("q", {"packets": 5})
    assert parse_override("r=true") == ("r", True)
    with pytest.raises(ValueError):
        parse_override("nothing")


def test_overrides(tmp_path):
    f = write(tmp_path, doc())
    s = load_scenario(
        f,
        [
            "duration=5s",
            "flows.bulk.cc=reno",
            "links.bottleneck.forward.loss=1%",
            "links[0].reverse.rate=2Mbit",
            "links.bottleneck.forward.queue={bdp = 2}",
            "seed=42",
        ],
    )
    assert s.duration == 5.0 and s.seed == 42 and s.flows[0].cc == "reno"
    link = s.links[0]
    assert link.forward.loss == 0.01 and link.reverse.rate == 2e6
    assert link.queue_packets("forward") == bdp_packets(10e6, 0.1, 2)
    # The file itself is unchanged.
    assert read_toml(f)["duration"] == "20s"


def test_sweep_expansion_count_and_labels(tmp_path):
    extra = """
[sweep]
"links.bottleneck.forward.rate" = ["1Mbit", "10Mbit", "50Mbit"]
"flows.bulk.cc" = ["reno", "cubic"]
"""
    points = load_points(write(tmp_path, doc(extra=extra)))
    assert len(points) == 6
    assert [p.label for p in points] == [
        "rate=1Mbit,cc=reno", "rate=1Mbit,cc=cubic", "rate=10Mbit,cc=reno",
        "rate=10Mbit,cc=cubic", "rate=50Mbit,cc=reno", "rate=50Mbit,cc=cubic",
    ]  # fmt: skip
    assert points[3].values == {"links.bottleneck.forward.rate": "10Mbit", "flows.bulk.cc": "cubic"}
    assert points[3].scenario.links[0].forward.rate == 10e6 and points[3].scenario.flows[0].cc == "cubic"
    assert all(not p.scenario.sweep for p in points)


def test_sweep_creates_unset_fields_and_disambiguates_labels(tmp_path):
    extra = """
[[links]]
name = "side"
between = ["server", "client"]

[sweep]
"links.bottleneck.forward.loss" = ["0%", "1%"]
"links.side.forward.loss" = [0, 0.5]
"""
    points = expand(read_toml(write(tmp_path, doc(extra=extra))))
    assert [p.label for p in points] == [
        "bottleneck.forward.loss=0%,side.forward.loss=0",
        "bottleneck.forward.loss=0%,side.forward.loss=0.5",
        "bottleneck.forward.loss=1%,side.forward.loss=0",
        "bottleneck.forward.loss=1%,side.forward.loss=0.5",
    ]
    assert points[3].scenario.links[1].forward.loss == 0.5


def test_sweep_together(tmp_path):
    extra = """
[[links]]
name = "leg2"
between = ["server", "client"]
forward = { rate = "20Mbit" }

[sweep]
"flows.bulk.cc" = ["reno", "cubic"]

[sweep.together.ratio]
"links.bottleneck.forward.rate" = ["20Mbit", "30Mbit", "32Mbit"]
"links.leg2.forward.rate" = ["20Mbit", "10Mbit", "8Mbit"]
"""
    points = load_points(write(tmp_path, doc(extra=extra)))
    assert len(points) == 6
    assert points[0].label == "cc=reno,ratio=20Mbit/20Mbit"
    assert points[5].label == "cc=cubic,ratio=32Mbit/8Mbit"
    last = points[5].scenario
    assert (last.links[0].forward.rate, last.links[1].forward.rate) == (32e6, 8e6)


def test_sweep_together_labels_name_the_steps(tmp_path):
    extra = """
[sweep.together.arm]
"flows.bulk.cc" = ["reno", "cubic"]
"links.bottleneck.forward.rate" = ["20Mbit", "30Mbit"]
labels = ["reno-20", "cubic-30"]
"""
    points = load_points(write(tmp_path, doc(extra=extra)))
    assert [p.label for p in points] == ["arm=reno-20", "arm=cubic-30"]
    assert points[1].axes == {"arm": "cubic-30"}
    assert points[1].scenario.flows[0].cc == "cubic"


@pytest.mark.parametrize("labels", ['["a"]', '["a", "a"]', '["a b", "c"]', "[1, 2]"])
def test_sweep_together_bad_labels(tmp_path, labels):
    extra = f"""
[sweep.together.arm]
"flows.bulk.cc" = ["reno", "cubic"]
labels = {labels}
"""
    with pytest.raises(ScenarioError, match=r"sweep\.together\.arm"):
        load_scenario(write(tmp_path, doc(extra=extra)))


def test_sweep_group_lengths_must_match(tmp_path):
    extra = """
[sweep.together.ratio]
"links.bottleneck.forward.rate" = ["20Mbit", "30Mbit"]
"links.bottleneck.reverse.rate" = ["20Mbit"]
"""
    with pytest.raises(ScenarioError, match=r"sweep\.together\.ratio: .*one common length"):
        load_scenario(write(tmp_path, doc(extra=extra)))


def test_no_sweep_is_one_point(tmp_path):
    points = load_points(write(tmp_path, doc()))
    assert len(points) == 1 and points[0].label == "" and points[0].values == {}


def test_dumbbell_to_topology():
    s = load_scenario(DATA / "dumbbell.toml")
    r = resolve(s)
    topo = r.topology
    assert topo.hosts == ("client1", "client2", "server1", "server2")
    assert r.routers == ("r1", "r2")
    assert [link.name for link in topo.links] == ["access1", "access2", "bottleneck", "exit1", "exit2"]
    b = topo.links[2]
    assert (b.a, b.b) == ("r1", "r2")
    fwd, rev = b.forward, b.reverse
    assert (fwd.rate, fwd.delay, fwd.jitter, fwd.distribution, fwd.loss) == (10e6, 0.05, 0.001, "uniform", 0.001)
    assert fwd.queue_packets == 84 and fwd.queue_bytes is None
    assert rev.queue_packets == 100 and rev.gilbert_elliott == GilbertElliott(p=0.01, r=0.1, h=0.0, k=1.0)
    assert rev.loss == 0.0
    ideal = topo.links[0].forward
    assert ideal.rate is None and ideal.delay == 0.0 and ideal.queue_packets is None
    exit2 = topo.links[4].forward
    assert exit2.trace_ms == tuple(range(1, 13)) and exit2.queue_bytes == 65536 and exit2.rate is None
    # Routing goes client1 → r1 → r2 → server1 over the bottleneck's forward direction.
    route = topo.route("client1", "server1")
    names = [topo.directions()[i][0] for i in route.directions]
    assert names == ["access1.forward", "bottleneck.forward", "exit1.forward"]
    assert topo.path_rtt("client1", "server1") == pytest.approx(0.1)
    # Delay 50 ms, 4 x 1 ms jitter, 84 full-size packets at 10 Mbit/s (100.8 ms); ideal
    # access and exit. The way to server2 ends behind a trace: no bound.
    assert topo.delivery_bound_s("client1", "server1") == pytest.approx(0.05 + 0.004 + 0.1008)
    assert topo.delivery_bound_s("client2", "server2") == math.inf
    assert topo.engine_config({h: 3 + i for i, h in enumerate(topo.hosts)}, s.seed, "log", "stats")

    bulk, cross, web = r.flows
    assert (bulk.from_, bulk.to, bulk.cc, bulk.stop, bulk.end, bulk.mss) == (
        "client1",
        "server1",
        "bbr",
        20.0,
        20.0,
        1280,
    )
    assert bulk.tcp_info_interval == 0.010
    assert (cross.protocol, cross.rate, cross.size, cross.start, cross.port, cross.cc) == (
        "udp",
        2e6,
        1200,
        10.0,
        6000,
        None,
    )
    assert cross.tcp_info_interval is None
    assert web.direction == "download" and web.objects.size == 100_000
    ports = [bulk.port, cross.port, web.port, r.probes[0].port]
    assert len(set(ports)) == 4 and bulk.port == 5201
    (probe,) = r.probes
    assert (probe.name, probe.interval, probe.count, probe.end, probe.size) == ("probe0", 0.1, 100, 30.0, 64)
    assert r.sysctls == {"client1": {"net.ipv4.tcp_rmem": "4096 131072 6291456", "net.ipv4.udp_rmem_min": "8192"}}
    assert (r.seed, r.repetitions, r.duration) == (7, 3, 30.0)
    a = r.analysis
    assert (a.bin, a.window, a.fairness_delta, a.bottleneck) == (1.0, (5.0, 25.0), 0.1, "bottleneck")


@pytest.mark.parametrize(
    ("params", "match"),
    [
        (
            "{ alpha = 2, delta = 1 }",
            r"cc_params\.delta: not a parameter of vegas \(it takes alpha, beta, gamma\) \(got 1\)",
        ),
        ('{ alpha = "two" }', r"cc_params\.alpha: vegas's alpha is a number"),
        ("{ alpha = -1 }", r"cc_params\.alpha: vegas's alpha is 0 to 1000 packets \(got -1\)"),
        # A rule between parameters, as for the TCP (BPF) Vegas.
        ("{ alpha = 6 }", r"cc_params\.alpha: vegas's alpha must not exceed beta \(4\) \(got 6\)"),
    ],
)
def test_quic_cc_params_are_checked_against_the_contract(tmp_path, params, match):
    """The parameters a controller takes come from contracts/contract.json, so a bad one
    is refused when the file is read, not by the agent in the middle of a run."""
    text = doc(protocol="quic", flow=f'cc = "vegas"\ncc_params = {params}')
    with pytest.raises(ScenarioError, match=match):
        load_scenario(write(tmp_path, text))


def test_a_choice_parameter_names_its_options(tmp_path):
    text = doc(protocol="quic", flow='cc = "ledbat"\ncc_params = { flavour = "utorrent" }')
    with pytest.raises(ScenarioError, match=r"ledbat's flavour is one of libutp, libtorrent \(got 'utorrent'\)"):
        load_scenario(write(tmp_path, text))


def test_a_smoke_run_scales_times_and_the_amounts_that_end_flows_and_probes(tmp_path):
    """`--smoke 3` of a 60 s scenario (k = 1/20): starts, stops and amounts scale by k, so
    an N-byte download sized for the full run still ends within the smoke run; a byte
    count keeps a floor, a count at least 1; what is no amount of time (a page's objects,
    a queue size) stays as it was."""
    from transportlab.plan.runs import SHORTENED_MIN_BYTES, shortened

    text = doc(duration='"60s"', flow='bytes = "100MB"\nstart = "20s"').replace(
        "[[flows]]",
        """[[flows]]
name = "small"
from = "client"
to = "server"
protocol = "tcp"
bytes = "200KB"

[[flows]]
name = "objects"
from = "client"
to = "server"
protocol = "tcp"
objects = { count = 50, size = "100KB" }

[[flows]]
name = "cbr"
from = "client"
to = "server"
protocol = "udp"
size = 500
interval = "4ms"
count = 10

[[flows]]
name = "timed"
from = "client"
to = "server"
protocol = "tcp"
start = "10s"
stop = "40s"

[[probes]]
from = "client"
to = "server"
interval = "100ms"
count = 100

[[probes]]
name = "late"
from = "client"
to = "server"
interval = "100ms"
start = "20s"
until = "40s"

[[flows]]""",
        1,
    )
    s = shortened(load_scenario(write(tmp_path, text)), 3.0)
    flows = {f.name: f for f in s.flows}
    assert (s.duration, s.repetitions) == (3.0, 1)
    assert flows["bulk"].bytes == 5_000_000 and flows["bulk"].start == pytest.approx(1.0)
    assert flows["small"].bytes == SHORTENED_MIN_BYTES  # 10 KB scaled, raised to the floor
    assert flows["objects"].objects.count == 50 and flows["objects"].objects.size == 100_000  # the page as it is
    assert flows["cbr"].count == 1 and flows["cbr"].interval == 0.004  # round(0.5) = 0, at least 1
    assert (flows["timed"].start, flows["timed"].stop, flows["timed"].bytes) == pytest.approx((0.5, 2.0, None))
    assert s.probes[0].count == 5 and s.probes[0].interval == 0.1
    assert (s.probes[1].start, s.probes[1].until, s.probes[1].count) == pytest.approx((1.0, 2.0, None))
    assert s.links[0].forward.queue.packets == 100
    # A scenario already shorter than the smoke's seconds is left as it is.
    same = shortened(load_scenario(write(tmp_path, doc(duration='"2s"', flow='bytes = "100MB"'))), 3.0)
    assert same.duration == 2.0 and same.flows[0].bytes == 100_000_000
