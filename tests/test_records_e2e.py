"""Records over kernel TCP in namespaces with loss on the data direction: in the
unordered arm a record that arrived behind a lost segment is handed over before that
loss is repaired; in the ordered arm it waits for the repair; in both, every record sent
is handed over exactly once."""

import json
import textwrap

import pyarrow.ipc
import pytest

from tlab_cli import run_one

pytestmark = pytest.mark.netns

# 1448-byte records (one segment each) every 20 ms for 6 s over RTT 100 ms with 5 % loss
# server → client: about 15 of the 300 records are lost once on the wire.
SCENARIO = textwrap.dedent(
    """
    name = "records-e2e"
    duration = "6s"
    seed = 7
    hosts = ["client", "server"]

    [[links]]
    name = "path"
    between = ["client", "server"]
    forward = {{ delay = "50ms" }}
    reverse = {{ delay = "50ms", loss = "5%" }}

    [[flows]]
    name = "rec"
    from = "client"
    to = "server"
    protocol = "tcp"
    size = 1448
    interval = "20ms"
    delivery = "{delivery}"
    """
)


def run_arm(tmp_path, delivery):
    m, run_dir = run_one(tmp_path, SCENARIO.format(delivery=delivery))
    flow = m["flows"]["rec"]
    raw = run_dir / "raw"
    client = json.loads((raw / "rec-client.json").read_text())["results"]
    server = json.loads((raw / "rec-server.json").read_text())["results"]["connections"][0]
    table = pyarrow.ipc.open_file(str(raw / "rec-client-records.arrow")).read_all()
    rows = sorted(zip(*(table.column(c).to_pylist() for c in ("id", "send_ns", "deliver_ns", "via", "stream_ns"))))
    # The socket's stream alone also completed every record (the reliable path).
    assert all(r[4] is not None and r[4] >= r[2] - 1_000_000 for r in rows)
    # Exactly once: every id the server sent, no other and no repeat.
    sent = server["records"]["records_sent"]
    assert sent >= 290, server["records"]
    assert [r[0] for r in rows] == list(range(sent))
    assert client["records"]["duplicate_ids"] == 0 and client["records"]["malformed"] == 0
    assert flow["records_sent"] == sent and flow["records_delivered"] == sent
    # The link dropped data and TCP repaired it.
    assert flow["drops"].get("random_loss", 0) > 0
    assert flow["retransmissions"] > 0
    return rows, flow, client


def repaired(rows, rtt_ns):
    """Records that waited for a repair: latency at least half an RTT over the smallest.
    Their delivery time is when the loss ahead of (or in) them was repaired."""
    base = min(r[2] - r[1] for r in rows)
    return [r for r in rows if r[2] - r[1] - base >= rtt_ns / 2]


def test_unordered_delivers_records_behind_a_loss_before_the_repair(tmp_path):
    rows, flow, client = run_arm(tmp_path, "unordered")
    late = repaired(rows, 100e6)
    assert late, "no record waited for a retransmission"
    # A record k sent after a repaired record j, handed over (by the packet path) before
    # j's repair: the in-order stream could not have given it before j.
    overtakers = [(j[0], k[0]) for j in late for k in rows if k[0] > j[0] and k[2] < j[2] and k[3] == "packet"]
    assert overtakers, late
    assert client["records"]["via_packet"] > 0 and client["records"]["tap"]["isn_seen"]
    assert client["records"]["tap"]["drops"] == 0


def test_ordered_delivers_records_behind_a_loss_after_the_repair(tmp_path):
    rows, flow, client = run_arm(tmp_path, "ordered")
    # In id order, delivery times never go back: no record passes one ahead of it.
    delivered = [r[2] for r in rows]
    assert delivered == sorted(delivered)
    assert all(r[3] == "stream" for r in rows)
    late = repaired(rows, 100e6)
    assert late
    # Records sent before a repair, after the repaired one, waited for it.
    waited = [(j[0], k[0]) for j in late for k in rows if k[0] > j[0] and k[1] < j[2]]
    assert waited and all(rows[k][2] >= rows[j][2] for j, k in waited)
    assert flow["records_late_share"] > 0
