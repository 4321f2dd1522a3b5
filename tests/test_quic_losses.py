"""`metrics.quic_losses`: a QUIC sender's declared losses split by the receiver's order of
arrival, on hand-made qlog events whose answer is worked out below."""

import pytest

from transportlab.metrics.quic_losses import arrival_lag, loss_causes


def pkt(name: str, t: float, pn: int, kind: str = "1RTT") -> tuple[float, str, dict]:
    return (t, name, {"header": {"packet_type": kind, "packet_number": pn}})


# The receiver gets 0 1 3 4 5 2 7 6 (2 behind 5: three numbers; 6 behind 7: one), 3 twice,
# and never 8; a handshake packet 9 does not count.
RECEIVER = [pkt("transport:packet_received", t, pn) for t, pn in enumerate([0, 1, 3, 4, 5, 2, 7, 6, 3])]
RECEIVER.append(pkt("transport:packet_received", 9.0, 9, "handshake"))


def test_arrival_lag_counts_how_far_ahead_the_highest_earlier_packet_was():
    assert arrival_lag(RECEIVER) == {0: 0, 1: 0, 3: 0, 4: 0, 5: 0, 2: 3, 7: 0, 6: 1}


def test_each_declared_loss_by_the_rule_that_could_have_fired():
    # Sent at pn ms; RTTs in seconds (quinn's): smoothed 20 ms, latest 16 ms, so the
    # time threshold's deadline is 9/8 × 20 = 22.5 ms after sending. 6 is declared
    # 0.4 ms after its deadline (6 + 22.5 + 0.4); 2 by the packet rule; 8 never came.
    sender = [pkt("transport:packet_sent", float(pn), pn) for pn in range(9)]
    sender.append((10.0, "recovery:metrics_updated", {"smoothed_rtt": 0.020, "latest_rtt": 0.016}))
    sender += [
        pkt("recovery:packet_lost", 30.0, 2),
        pkt("recovery:packet_lost", 28.9, 6),
        pkt("recovery:packet_lost", 40.0, 8),
        pkt("recovery:packet_lost", 41.0, 1, "handshake"),
    ]
    c = loss_causes(sender, RECEIVER, rtt_scale=1000.0)
    assert (c.declared, c.packet_threshold, c.time_threshold, c.never_arrived) == (3, 1, 1, 1)
    assert c.overshoot_ms == [pytest.approx(0.4)]
    # RTTs given in ms (qlog 0.3, the other stacks): the same deadline with scale 1.
    ms = [(t, n, {"smoothed_rtt": 20.0, "latest_rtt": 16.0}) if n == "recovery:metrics_updated" else (t, n, d)
          for t, n, d in sender]  # fmt: skip
    assert loss_causes(ms, RECEIVER).overshoot_ms == [pytest.approx(0.4)]


def test_no_losses_and_no_rtt_yet():
    sender = [pkt("transport:packet_sent", 0.0, 0), pkt("recovery:packet_lost", 5.0, 6)]
    c = loss_causes(sender, RECEIVER)
    assert (c.declared, c.time_threshold, c.overshoot_ms) == (1, 1, [])  # 6 sent unseen, no RTT: no deadline
    assert loss_causes([], []).declared == 0
