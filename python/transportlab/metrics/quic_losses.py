"""Why a QUIC sender declared its packets lost, read from both ends' qlogs: the receiver's
order of arrival says which of RFC 9002's two rules could have fired for each one.

- **packet threshold**: the packet arrived behind at least `PACKET_THRESHOLD` (3) later-numbered
  packets, so an ACK of one of those could declare it before it came;
- **time threshold**: it arrived, but behind fewer (or in order): only the time rule
  (sent more than 9/8 × max(smoothed, latest RTT) before an ACK of a later packet, or
  the loss timer) declares it — a spurious loss of reordering or delay;
- **never arrived**: a real loss.

A stack's own label can be wrong (quinn-proto 0.11.19 labels every loss
`reordering_threshold`), so the split comes from the arrival order, not the label. For the
time-threshold ones, `overshoot_ms` is how long after its deadline each was declared: 0 for
a loss timer that fires on time, more for a late timer or an ACK that came after it."""

from __future__ import annotations

from dataclasses import dataclass, field

# RFC 9002's kPacketThreshold and kTimeThreshold.
PACKET_THRESHOLD = 3
TIME_THRESHOLD = 9 / 8

Event = tuple[float, str, dict]  # (time ms, name, data), as `artefacts.qlog.Trace.events`


@dataclass
class LossCauses:
    declared: int = 0
    packet_threshold: int = 0
    time_threshold: int = 0
    never_arrived: int = 0
    overshoot_ms: list[float] = field(default_factory=list)


def _one_rtt(data: dict) -> int | None:
    header = data.get("header") or {}
    return header.get("packet_number") if header.get("packet_type") == "1RTT" else None


def arrival_lag(receiver: list[Event]) -> dict[int, int]:
    """For each 1-RTT packet the receiver logged, in its order of arrival: by how many
    packet numbers the highest one received before it was ahead of it (0: in order)."""
    lag, highest = {}, -1
    for _, name, data in receiver:
        pn = _one_rtt(data) if name == "transport:packet_received" else None
        if pn is None or pn in lag:
            continue
        lag[pn] = max(highest - pn, 0)
        highest = max(highest, pn)
    return lag


def loss_causes(sender: list[Event], receiver: list[Event], rtt_scale: float = 1.0) -> LossCauses:
    """The sender's declared 1-RTT losses by cause. `rtt_scale` turns the sender's
    `metrics_updated` RTTs into ms (1000 for quinn-proto 0.11, which writes seconds)."""
    lag = arrival_lag(receiver)
    out, sent, srtt, latest = LossCauses(), {}, None, None
    for t, name, data in sender:
        if name == "transport:packet_sent" and (pn := _one_rtt(data)) is not None:
            sent[pn] = t
        elif name == "recovery:metrics_updated":
            srtt = data.get("smoothed_rtt", srtt)
            latest = data.get("latest_rtt", latest)
        elif name == "recovery:packet_lost" and (pn := _one_rtt(data)) is not None:
            out.declared += 1
            if pn not in lag:
                out.never_arrived += 1
            elif lag[pn] >= PACKET_THRESHOLD:
                out.packet_threshold += 1
            else:
                out.time_threshold += 1
                rtts = [r for r in (srtt, latest) if r is not None]
                if pn in sent and rtts:
                    out.overshoot_ms.append(t - sent[pn] - TIME_THRESHOLD * max(rtts) * rtt_scale)
    return out
