"""The same records over QUIC in namespaces with loss on the data direction: read
unordered (one stream's chunks into the record assembler) or a stream per record, a record
that arrived behind a lost packet is handed over before that loss is repaired; every
record sent is handed over exactly once. (The ordered TCP and QUIC arms wait for the
repair: tests/test_records_e2e.py shows it for TCP.)"""

import pytest

from records_run import repaired, run_records

pytestmark = pytest.mark.netns


@pytest.mark.parametrize("delivery, via", [("unordered", "chunk"), ("streams", "stream")])
def test_quic_records_behind_a_loss_come_before_the_repair_exactly_once(tmp_path, delivery, via):
    # 5 s of records: about 12 of the 250 records' packets are lost once.
    columns = ("id", "send_ns", "deliver_ns", "via")
    rows, flow, client = run_records(tmp_path, "5s", "quic", delivery, columns, 240)
    assert client["records"]["delivery"] == delivery and all(r[3] == via for r in rows)
    assert flow["lost_packets"] > 0
    # QUIC's retransmission rate (packets declared lost ÷ packets sent, docs/metrics.md)
    # sees the link's loss (5 % of the data packets), and both agents report their CPU.
    assert 0.01 < flow["retransmission_rate"] < 0.2, flow["retransmission_rate"]
    assert flow["cpu_s"]["total"] > 0, flow["cpu_s"]
    # Records that waited for a repair, and a record sent after one of them but handed
    # over before it: the in-order stream could not have.
    late = repaired(rows)
    assert late, "no record waited for a repair"
    overtakers = [(j[0], k[0]) for j in late for k in rows if k[0] > j[0] and k[2] < j[2]]
    assert overtakers, late
