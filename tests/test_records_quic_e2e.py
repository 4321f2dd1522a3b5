"""The same records over QUIC in namespaces with loss on the data direction: read
unordered (one stream's chunks into the record assembler) or a stream per record, a record
that arrived behind a lost packet is handed over before that loss is repaired; every
record sent is handed over exactly once. (The ordered TCP and QUIC arms wait for the
repair: tests/test_records_e2e.py shows it for TCP.)"""

import json
import textwrap

import pyarrow.ipc
import pytest

from tlab_cli import run_one

pytestmark = pytest.mark.netns

# 1448-byte records every 20 ms for 5 s over RTT 100 ms with 5 % loss server → client:
# about 12 of the 250 records' packets are lost once.
SCENARIO = textwrap.dedent(
    """
    name = "records-quic-e2e"
    duration = "5s"
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
    protocol = "quic"
    size = 1448
    interval = "20ms"
    delivery = "{delivery}"
    """
)


@pytest.mark.parametrize("delivery, via", [("unordered", "chunk"), ("streams", "stream")])
def test_quic_records_behind_a_loss_come_before_the_repair_exactly_once(tmp_path, delivery, via):
    m, run_dir = run_one(tmp_path, SCENARIO.format(delivery=delivery))
    flow = m["flows"]["rec"]
    raw = run_dir / "raw"
    client = json.loads((raw / "rec-client.json").read_text())["results"]
    server = json.loads((raw / "rec-server.json").read_text())["results"]["connections"][0]
    table = pyarrow.ipc.open_file(str(raw / "rec-client-records.arrow")).read_all()
    rows = sorted(zip(*(table.column(c).to_pylist() for c in ("id", "send_ns", "deliver_ns", "via"))))
    # Exactly once: every id the server sent, no other and no repeat.
    sent = server["records"]["records_sent"]
    assert sent >= 240, server["records"]
    assert [r[0] for r in rows] == list(range(sent))
    assert client["records"]["duplicate_ids"] == 0 and client["records"]["malformed"] == 0
    assert client["records"]["delivery"] == delivery and all(r[3] == via for r in rows)
    assert flow["records_sent"] == sent and flow["records_delivered"] == sent
    assert flow["drops"].get("random_loss", 0) > 0 and flow["lost_packets"] > 0
    # Records that waited for a repair (latency ≥ the smallest + RTT/2), and a record sent
    # after one of them but handed over before it: the in-order stream could not have.
    base = min(r[2] - r[1] for r in rows)
    late = [r for r in rows if r[2] - r[1] - base >= 50e6]
    assert late, "no record waited for a repair"
    overtakers = [(j[0], k[0]) for j in late for k in rows if k[0] > j[0] and k[2] < j[2]]
    assert overtakers, late
