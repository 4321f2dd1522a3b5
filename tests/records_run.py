"""The records scenario the end-to-end records tests share (tests/test_records_e2e.py
for TCP, tests/test_records_quic_e2e.py for QUIC): 1448-byte records every 20 ms over RTT
100 ms with 5 % loss server → client, run through `tlab run`, and what every arm must
show — every record the server sent handed over exactly once."""

import json

import pyarrow.ipc

from one_flow import one_flow_scenario
from tlab_cli import run_one

RTT_NS = 100e6

# One way 50 ms each; 5 % loss on the data's way (server → client).
FORWARD, REVERSE = 'delay = "50ms"', 'delay = "50ms", loss = "5%"'


def run_records(tmp_path, duration, protocol, delivery, columns, min_sent):
    """Runs the scenario; returns the client's records series as rows of `columns`
    (sorted, so in id order), the flow's metrics and the client's results, after checking
    that at least `min_sent` records were sent and each was handed over exactly once."""
    flow_lines = f'size = 1448\ninterval = "20ms"\ndelivery = "{delivery}"'
    text = one_flow_scenario(
        flow_lines,
        name="rec",
        protocol=protocol,
        forward=FORWARD,
        reverse=REVERSE,
        duration=duration,
        settings="seed = 7",
    )
    m, run_dir = run_one(tmp_path, text)
    flow = m["flows"]["rec"]
    raw = run_dir / "raw"
    client = json.loads((raw / "rec-client.json").read_text())["results"]
    server = json.loads((raw / "rec-server.json").read_text())["results"]["connections"][0]
    table = pyarrow.ipc.open_file(str(raw / "rec-client-records.arrow")).read_all()
    rows = sorted(zip(*(table.column(c).to_pylist() for c in columns)))
    # Exactly once: every id the server sent, no other and no repeat.
    sent = server["records"]["records_sent"]
    assert sent >= min_sent, server["records"]
    assert [r[0] for r in rows] == list(range(sent))
    assert client["records"]["duplicate_ids"] == 0 and client["records"]["malformed"] == 0
    assert flow["records_sent"] == sent and flow["records_delivered"] == sent
    # The link dropped data.
    assert flow["drops"].get("random_loss", 0) > 0
    return rows, flow, client


def repaired(rows, rtt_ns=RTT_NS):
    """Records that waited for a repair: latency at least half an RTT over the smallest.
    Their delivery time is when the loss ahead of (or in) them was repaired."""
    base = min(r[2] - r[1] for r in rows)
    return [r for r in rows if r[2] - r[1] - base >= rtt_ns / 2]
