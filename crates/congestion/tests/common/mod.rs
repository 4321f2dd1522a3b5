//! Virtual-time drivers shared by the integration tests.
#![allow(dead_code)]

use congestion::{Acked, Controller, Lost, Nanos, Rtt, Sent};
use std::num::NonZeroU64;

pub const MSS: u64 = 1200;
pub const MS: Nanos = 1_000_000;
pub const SECOND: Nanos = 1_000_000_000;

/// RTT estimates where all three agree (a path without jitter).
/// A datagram size for `on_mtu`.
pub fn mtu(bytes: u64) -> NonZeroU64 {
    NonZeroU64::new(bytes).expect("an MTU is not 0")
}

pub fn steady_rtt(rtt: Nanos) -> Rtt {
    Rtt {
        latest: rtt,
        min: rtt,
        smoothed: rtt,
    }
}

pub fn ack(now: Nanos, sent_time: Nanos, rtt: Rtt) -> Acked {
    Acked {
        now,
        sent_time,
        bytes: MSS,
        rtt,
        app_limited: false,
    }
}

pub fn app_limited_ack(now: Nanos, sent_time: Nanos, rtt: Rtt) -> Acked {
    Acked {
        app_limited: true,
        ..ack(now, sent_time, rtt)
    }
}

pub fn loss(now: Nanos, sent_time: Nanos) -> Lost {
    Lost {
        now,
        sent_time,
        bytes: MSS,
        persistent: false,
    }
}

pub fn persistent_loss(now: Nanos, sent_time: Nanos) -> Lost {
    Lost {
        persistent: true,
        ..loss(now, sent_time)
    }
}

pub fn sent(time: Nanos, packet_number: u64, bytes_in_flight: u64) -> Sent {
    Sent {
        time,
        bytes: MSS,
        packet_number,
        bytes_in_flight,
    }
}

/// Window in whole MSS-sized packets (at least one).
pub fn packets(controller: &dyn Controller) -> u64 {
    (controller.window() / MSS).max(1)
}

/// One round trip of a window-limited sender: the window at `start` in MSS-sized
/// packets, acked evenly over `rtt` (packet i of n at start + i·rtt/n, each sent exactly
/// one `rtt` before its ack, one ACK frame per packet). Returns start + rtt. The first
/// packet was sent at start + rtt/n − rtt, so a drive starts at least one `rtt` after 0.
pub fn ack_round(controller: &mut dyn Controller, start: Nanos, rtt: Nanos) -> Nanos {
    let n = packets(controller);
    for i in 1..=n {
        let now = start + i * rtt / n;
        let sent = now.checked_sub(rtt).unwrap_or_else(|| {
            panic!("ack_round: a packet acked at {now} ns was sent one rtt ({rtt} ns) earlier, before time 0")
        });
        controller.on_ack(&ack(now, sent, steady_rtt(rtt)));
        controller.on_ack_end(now, 0);
    }
    start + rtt
}

/// `count` packets acked 1 µs apart from `start`, each sent one `rtt` earlier.
/// Returns the time of the last ack.
pub fn ack_packets(controller: &mut dyn Controller, start: Nanos, count: u64, rtt: Nanos) -> Nanos {
    let mut now = start;
    for i in 0..count {
        now = start + i * 1_000;
        controller.on_ack(&ack(now, now - rtt, steady_rtt(rtt)));
        controller.on_ack_end(now, 0);
    }
    now
}

pub fn diagnostic(controller: &dyn Controller, name: &str) -> Option<f64> {
    controller
        .diagnostics()
        .into_iter()
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value)
}
