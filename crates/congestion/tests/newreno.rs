//! NewReno (RFC 9002 §7) in virtual time, MSS = 1200 bytes throughout.

mod common;

use common::*;
use congestion::newreno::NewReno;
use congestion::Controller;

const RTT: u64 = 100 * MS;

#[test]
fn initial_window_follows_rfc9002() {
    // min(10·1200, max(14720, 2400)) = 12000; min(10·1460, 14720) = 14600;
    // min(10·9000, max(14720, 18000)) = 18000.
    assert_eq!(NewReno::new(1200).window(), 12_000);
    assert_eq!(NewReno::new(1460).window(), 14_600);
    assert_eq!(NewReno::new(9000).window(), 18_000);
}

#[test]
fn slow_start_doubles_per_rtt() {
    // Each acked packet adds its 1200 bytes, so a round of acks doubles the window:
    // 12000 → 24000 → 48000 → 96000.
    let mut reno = NewReno::new(MSS);
    let mut now = SECOND;
    for expected in [24_000, 48_000, 96_000] {
        now = ack_round(&mut reno, now, RTT);
        assert_eq!(reno.window(), expected);
    }
    assert_eq!(reno.ssthresh(), None);
}

/// Slow start to 96000, then a loss at `now` of a packet sent before it.
fn after_loss() -> (NewReno, u64) {
    let mut reno = NewReno::new(MSS);
    let mut now = SECOND;
    for _ in 0..3 {
        now = ack_round(&mut reno, now, RTT);
    }
    reno.on_loss(&loss(now, now - RTT / 2));
    (reno, now)
}

#[test]
fn congestion_avoidance_adds_one_mss_per_rtt() {
    // Loss at 96000: ssthresh = window = 48000. The next round's acks are of packets
    // sent before the loss (sent at ack − RTT < loss time): recovery, no growth. From
    // then on each round acks 48000/1200 = 40 packets = one window → +1200 exactly:
    // 49200 (41 packets), 50400 (42), 51600.
    let (mut reno, mut now) = after_loss();
    assert_eq!((reno.window(), reno.ssthresh()), (48_000, Some(48_000)));
    now = ack_round(&mut reno, now, RTT);
    assert_eq!(reno.window(), 48_000, "recovery period: no growth");
    for expected in [49_200, 50_400, 51_600] {
        now = ack_round(&mut reno, now, RTT);
        assert_eq!(reno.window(), expected);
    }
}

#[test]
fn loss_halves_once_per_recovery_period() {
    // First loss: 96000 → 48000. A second loss of a packet sent before the first loss
    // (the same congestion event) changes nothing. Acking a packet sent after the loss
    // ends recovery (CA credit 1200 < 48000: no visible growth), and a loss of a packet
    // sent after recovery began is a new event: 48000 → 24000.
    let (mut reno, now) = after_loss();
    reno.on_loss(&loss(now + 10 * MS, now - RTT / 4));
    assert_eq!(reno.window(), 48_000);
    reno.on_loss(&loss(now + 20 * MS, now));
    assert_eq!(
        reno.window(),
        48_000,
        "sent at the recovery start itself: still the same event"
    );
    reno.on_ack(&ack(now + RTT + MS, now + MS, steady_rtt(RTT)));
    assert_eq!(reno.window(), 48_000);
    reno.on_loss(&loss(now + RTT + 2 * MS, now + MS));
    assert_eq!((reno.window(), reno.ssthresh()), (24_000, Some(24_000)));
}

#[test]
fn persistent_congestion_collapses_to_minimum_window() {
    // 96000 → ssthresh 48000, then persistent congestion: window = 2·1200 = 2400. The
    // recovery start is forgotten, so slow start resumes at once: one ack → 3600.
    let mut reno = NewReno::new(MSS);
    let mut now = SECOND;
    for _ in 0..3 {
        now = ack_round(&mut reno, now, RTT);
    }
    reno.on_loss(&persistent_loss(now, now - RTT / 2));
    assert_eq!((reno.window(), reno.ssthresh()), (2_400, Some(48_000)));
    reno.on_ack(&ack(now + MS, now - RTT / 4, steady_rtt(RTT)));
    assert_eq!(reno.window(), 3_600);
}

#[test]
fn minimum_window_floors_repeated_losses() {
    // 12000 → 6000 → 3000 → 2400 (1500 would be below 2·MSS); ssthresh is not floored.
    let mut reno = NewReno::new(MSS);
    let mut now = SECOND;
    for expected in [6_000, 3_000, 2_400, 2_400] {
        reno.on_loss(&loss(now, now - 1));
        assert_eq!(reno.window(), expected);
        now += SECOND;
    }
    assert_eq!(reno.ssthresh(), Some(1_200));
}

#[test]
fn app_limited_acks_do_not_grow_the_window() {
    let mut reno = NewReno::new(MSS);
    for i in 1..=20 {
        reno.on_ack(&app_limited_ack(SECOND + i * MS, SECOND, steady_rtt(RTT)));
    }
    assert_eq!(reno.window(), 12_000);
}

#[test]
fn mtu_change_recomputes_initial_window_until_traffic_then_floors() {
    // Untouched: the initial window follows the MTU (1460 → 14600). After an ack the
    // window stays (plus the acked 1200 bytes: 15800), but never below 2·MSS (a
    // 9000-byte MSS floors it at 18000).
    let mut reno = NewReno::new(MSS);
    reno.on_mtu(mtu(1460));
    assert_eq!(reno.window(), 14_600);
    reno.on_ack(&ack(SECOND, SECOND - RTT, steady_rtt(RTT)));
    assert_eq!(reno.window(), 15_800);
    reno.on_mtu(mtu(9000));
    assert_eq!(reno.window(), 18_000);
}

#[test]
fn clone_carries_state() {
    let mut reno = NewReno::new(MSS);
    ack_round(&mut reno, SECOND, RTT);
    let copy = reno.box_clone();
    assert_eq!((copy.window(), copy.name()), (24_000, "newreno"));
}
