"""Records over kernel TCP in namespaces with loss on the data direction: in the
unordered arm a record that arrived behind a lost segment is handed over before that
loss is repaired; in the ordered arm it waits for the repair; in both, every record sent
is handed over exactly once."""

import pytest

from records_run import repaired, run_records

pytestmark = pytest.mark.netns


def run_arm(tmp_path, delivery):
    # 6 s of records: about 15 of the 300 are lost once on the wire.
    columns = ("id", "send_ns", "deliver_ns", "via", "stream_ns")
    rows, flow, client = run_records(tmp_path, "6s", "tcp", delivery, columns, 290)
    # The socket's stream alone also completed every record (the reliable path).
    assert all(r[4] is not None and r[4] >= r[2] - 1_000_000 for r in rows)
    # TCP repaired the link's drops.
    assert flow["retransmissions"] > 0
    return rows, flow, client


def test_unordered_delivers_records_behind_a_loss_before_the_repair(tmp_path):
    rows, flow, client = run_arm(tmp_path, "unordered")
    late = repaired(rows)
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
    late = repaired(rows)
    assert late
    # Records sent before a repair, after the repaired one, waited for it.
    waited = [(j[0], k[0]) for j in late for k in rows if k[0] > j[0] and k[1] < j[2]]
    assert waited and all(rows[k][2] >= rows[j][2] for j, k in waited)
    assert flow["records_late_share"] > 0
