"""The tcp records workload on the Python side: scenario fields and their errors, the
agent command lines, and the record metrics on a hand-made per-record series whose
answers are computed by hand in the comments."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.ipc
import pytest

from one_flow import assert_refused, load_one_flow
from transportlab import metrics as M
from transportlab.artefacts.rundir import read_arrow
from transportlab.kinds.base import Files
from transportlab.kinds.quic import Quic
from transportlab.kinds.records import records_metrics
from transportlab.kinds.tcp import Tcp
from transportlab.kinds.udp import Udp
from transportlab.plan.resolve import to_flows

MS = 1_000_000


LINK = {"forward": 'delay = "50ms"', "reverse": 'delay = "50ms", loss = "2%"'}


def load(tmp_path: Path, flow: str):
    return load_one_flow(tmp_path / "s.toml", flow, name="rec", **LINK)


def test_records_flow_runs_download_with_the_agent_options(tmp_path):
    s = load(tmp_path, 'size = 1448\ninterval = "20ms"\ndelivery = "unordered"')
    spec = s.flows[0]
    assert (spec.direction, spec.size, spec.interval, spec.delivery) == ("download", 1448, 0.02, "unordered")
    (flow,) = to_flows(s)
    files = Files.of(tmp_path / "raw", "rec")
    client = Tcp().endpoints(flow, "10.0.0.2", files, 12.0).client
    text = " ".join(client)
    assert "--record-size 1448" in text
    assert "--record-interval 20000000ns" in text
    assert "--duration 10000000000ns" in text
    assert "--delivery unordered" in text
    assert f"--record-series {tmp_path / 'raw' / 'rec-client-records.arrow'}" in text
    assert "--direction" not in text


def test_delivery_defaults_to_ordered(tmp_path):
    assert load(tmp_path, 'size = 100\ninterval = "1s"').flows[0].delivery == "ordered"


BAD = [
    ("delivery = \"sideways\"\nsize = 100\ninterval = \"1s\"", "flows.rec.delivery", "'sideways'"),
    ("size = 18\ninterval = \"1s\"", "flows.rec.size", "19 bytes"),
    ("size = 100", "flows.rec.interval", "interval is missing"),
    ("delivery = \"ordered\"", "flows.rec.size", "size is missing"),
    ("size = 100\ninterval = \"1s\"\nbytes = 5000", "flows.rec.bytes", "5000"),
    ("size = 100\ninterval = \"1s\"\ndirection = \"upload\"", "flows.rec.direction", "'upload'"),
    ("size = 100\ninterval = \"1s\"\ndelivery = \"unordered\"\ntls = true", "flows.rec.delivery", "TLS"),
]  # fmt: skip


@pytest.mark.parametrize("flow, path, value", BAD, ids=[b[1] + ":" + b[2] for b in BAD])
def test_bad_records_fields_name_the_field_and_value(tmp_path, flow, path, value):
    assert_refused(lambda: load(tmp_path, flow), path, value)


def load_as(tmp_path: Path, protocol: str, flow: str):
    p = tmp_path / "s.toml"
    return p, load_one_flow(p, flow, name="rec", protocol=protocol, **LINK)


def test_quic_records_run_download_with_the_agent_options(tmp_path):
    _, s = load_as(tmp_path, "quic", 'size = 1448\ninterval = "20ms"\ndelivery = "streams"')
    spec = s.flows[0]
    assert (spec.direction, spec.size, spec.delivery) == ("download", 1448, "streams")
    (flow,) = to_flows(s)
    files = Files.of(tmp_path / "raw", "rec")
    text = " ".join(Quic().endpoints(flow, "10.0.0.2", files, 12.0).client)
    assert "--record-size 1448 --record-interval 20000000ns" in text
    assert "--delivery streams" in text
    assert f"--record-series {tmp_path / 'raw' / 'rec-client-records.arrow'}" in text
    assert "--message-size" not in text and "--direction" not in text


def test_quic_qlog_is_written_unless_the_flow_says_qlog_false(tmp_path):
    records = 'size = 1448\ninterval = "10us"\nstop = "207.19ms"\ndelivery = "ordered"'
    files = Files.of(tmp_path / "raw", "rec")
    for extra, written in (("", True), ("\nqlog = false", False)):
        (flow,) = to_flows(load_as(tmp_path, "quic", records + extra)[1])
        ends = Quic().endpoints(flow, "10.0.0.2", files, 12.0)
        assert ("--qlog" in ends.client, "--qlog" in ends.server) == (written, written)
    # Only quic flows write a qlog.
    p, _ = load_as(tmp_path, "quic", records)
    assert_refused(lambda: load_as(tmp_path, "tcp", records + "\nqlog = false"), "flows.rec.qlog", "qlog", p)


def test_udp_records_are_datagrams_with_a_record_series(tmp_path):
    _, s = load_as(tmp_path, "udp", 'size = 1448\ninterval = "20ms"\ndelivery = "unordered"')
    (flow,) = to_flows(s)
    files = Files.of(tmp_path / "raw", "rec")
    ends = Udp().endpoints(flow, "10.0.0.2", files, 12.0)
    assert f"--record-series {tmp_path / 'raw' / 'rec-server-records.arrow'}" in " ".join(ends.server)


BAD_COMBINATIONS = [
    ("tcp", 'size = 100\ninterval = "1s"\ndelivery = "streams"', "flows.rec.delivery", "'streams'"),
    ("udp", 'size = 100\ninterval = "1s"\ndelivery = "ordered"', "flows.rec.delivery", "'ordered'"),
    ("udp", 'size = 1473\ninterval = "1s"\ndelivery = "unordered"', "flows.rec.size", "1473"),
    ("quic", 'size = 18\ninterval = "1s"\ndelivery = "ordered"', "flows.rec.size", "18"),
    ("quic", 'size = 100\nrate = "1Mbit"\ninterval = "1s"\ndelivery = "unordered"', "flows.rec.rate", "rate"),
    ("quic", 'size = 100\ninterval = "1s"\ndelivery = "unordered"\ndirection = "upload"', "flows.rec.direction",
     "'upload'"),
]  # fmt: skip


@pytest.mark.parametrize(
    "protocol, flow, path, value", BAD_COMBINATIONS, ids=[f"{b[0]}:{b[2]}" for b in BAD_COMBINATIONS]
)
def test_bad_delivery_and_protocol_combinations_name_file_flow_field_value(tmp_path, protocol, flow, path, value):
    assert_refused(lambda: load_as(tmp_path, protocol, flow), path, value, tmp_path / "s.toml")


def test_the_simulator_refuses_records_naming_flow_and_field(tmp_path):
    from transportlab.plan.resolve import resolve
    from transportlab.run.simulate import refusals

    for protocol, flow in (
        ("tcp", 'size = 1448\ninterval = "20ms"'),
        ("quic", 'size = 1448\ninterval = "20ms"\ndelivery = "unordered"'),
        ("udp", 'size = 1448\ninterval = "20ms"\ndelivery = "unordered"'),
    ):
        _, s = load_as(tmp_path, protocol, flow)
        (why,) = [r for r in refusals(resolve(s)) if r[0].startswith("flows.rec")]
        assert why[0] == "flows.rec.delivery" and "records" in why[1], why


# --- metrics on a hand-made series ---------------------------------------------------

# Latencies (ms) of ids 0..6: 50, 52, 51, 160, 55, 260, 150; id 7 was sent and never
# delivered; id 3 appears twice (a later copy at 400 ms that must be ignored).
LAT_MS = [50, 52, 51, 160, 55, 260, 150]
SENT = 8


def write_series(path: Path) -> None:
    ids = list(range(7)) + [3]
    send = [i * 20 * MS for i in ids]
    deliver = [s + lat * MS for s, lat in zip(send[:7], LAT_MS)] + [send[7] + 400 * MS]
    table = pa.table(
        {
            "id": pa.array(ids, pa.uint64()),
            "size": pa.array([1448] * 8, pa.uint32()),
            "send_ns": pa.array(send, pa.int64()),
            "deliver_ns": pa.array(deliver, pa.int64()),
            "via": pa.array(["stream"] * 8),
        }
    )
    with pa.OSFile(str(path), "wb") as f, pyarrow.ipc.new_file(f, table.schema) as w:
        w.write_table(table)


def test_latencies_and_late_share_by_hand(tmp_path):
    write_series(tmp_path / "s.arrow")
    series = read_arrow(tmp_path / "s.arrow")
    lat = M.record_latencies(series)
    assert list(lat / MS) == LAT_MS  # id order, first copy of id 3
    # Delays over the smallest latency (50): 0, 2, 1, 110, 5, 210, 100. At least one RTT
    # (100 ms): 110, 210 and exactly 100 → 3, plus id 7 never delivered → 4 of 8.
    assert M.late_share(lat, SENT, 100 * MS) == 0.5
    # RTT 150 ms: 210 only, plus id 7 → 2 of 8.
    assert M.late_share(lat, SENT, 150 * MS) == 0.25
    assert M.late_share(lat, 0, 100 * MS) is None
    assert M.late_share(lat, SENT, 0) is None
    assert M.late_share(np.zeros(0), 4, 100 * MS) == 1.0


class _Run:
    def __init__(self, raw: Path):
        self.raw = raw

    def series(self, stem: str):
        return read_arrow(self.raw / f"{stem}.arrow")


def test_kind_record_metrics_by_hand(tmp_path):
    write_series(tmp_path / "rec-client-records.arrow")
    client = {"mode": "records", "records": {"malformed": 1, "via_packet": 5}}
    sender = {"records": {"records_sent": SENT}, "tcp_info": {"min_rtt_us": 100_000}}
    m = records_metrics(_Run(tmp_path), "rec", client, sender)
    # Sorted latencies 50, 51, 52, 55, 150, 160, 260 (n = 7, linear interpolation):
    # p50 = the 4th = 55; p95 at rank 5.7 = 160 + 0.7·100 = 230; p99 at 5.94 = 254;
    # mean = 778 / 7.
    lat = m["record_latency_ms"]
    assert lat["p50"] == pytest.approx(55)
    assert lat["p95"] == pytest.approx(230)
    assert lat["p99"] == pytest.approx(254)
    assert lat["mean"] == pytest.approx(778 / 7)
    assert m["records_sent"] == 8 and m["records_delivered"] == 7
    assert m["records_late_share"] == 0.5
    assert m["records_rtt_ms"] == 100.0
    assert (m["records_malformed"], m["records_via_packet"]) == (1, 5)
