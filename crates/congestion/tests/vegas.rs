//! Vegas in virtual time: MSS = 1200 bytes, BaseRTT = 100 ms, α = 2, β = 4, γ = 1.

mod common;

use common::*;
use congestion::vegas::Vegas;
use congestion::{Controller, Nanos};

const BASE: Nanos = 100 * MS;

/// One round trip: the whole window (in packets, at the round's start) sent at `start`,
/// acked 1 µs apart from start + rtt. The first ack of a round is for a packet sent
/// after the previous round's first ack, so it ends that round: Vegas decides on round
/// k's RTT at the first ack of round k + 1. Returns the last ack's time (the next
/// round's send time).
fn round(vegas: &mut Vegas, start: Nanos, rtt: Nanos) -> Nanos {
    let n = vegas.packets();
    let mut now = start;
    for i in 0..n {
        now = start + rtt + i * 1_000;
        vegas.on_ack(&ack(now, start, sample(rtt, BASE)));
        vegas.on_ack_end(now, 0);
    }
    now
}

/// An RTT sample on a path whose minimum is `min`.
fn sample(latest: Nanos, min: Nanos) -> congestion::Rtt {
    congestion::Rtt {
        latest,
        min,
        smoothed: latest,
    }
}

/// Slow start then exit at γ, as in `slow_start_exits_when_diff_exceeds_gamma`:
/// returns a Vegas in congestion avoidance at 65 packets whose last round had RTT 125 ms.
/// `count` rounds of `rtt` from `now`: the window (packets) after each, and the time
/// after the last.
fn windows_over_rounds(vegas: &mut Vegas, mut now: Nanos, rtt: Nanos, count: usize) -> (Vec<u64>, Nanos) {
    let windows = (0..count)
        .map(|_| {
            now = round(vegas, now, rtt);
            vegas.packets()
        })
        .collect();
    (windows, now)
}

/// Slow start's four rounds: two at BaseRTT, two at 125 ms (the exit). Returns the time.
fn through_slow_start(vegas: &mut Vegas) -> Nanos {
    let mut now = SECOND;
    for rtt in [BASE, BASE, 125 * MS, 125 * MS] {
        now = round(vegas, now, rtt);
    }
    now
}

fn in_avoidance() -> (Vegas, Nanos) {
    let mut vegas = Vegas::new(MSS, 0);
    let now = through_slow_start(&mut vegas);
    assert_eq!((vegas.packets(), vegas.ssthresh()), (65, Some(65 * MSS)));
    (vegas, now)
}

#[test]
fn slow_start_exits_when_diff_exceeds_gamma() {
    // Initial window 12000/1200 = 10 packets; every ack in slow start adds a packet.
    // R1 (100 ms): 10 → 20. R2 (100 ms): its first ack ends R1 (Diff 0 ≤ γ) → 40.
    // R3 (125 ms): R2's Diff 0 → 80. R4's first ack ends R3: RTT 125, BaseRTT 100:
    //   Diff = 80·25/125 = 16 > γ = 1, target = ⌊80·100/125⌋ = 64,
    //   cwnd = min(ssthresh = ∞, 64 + 1) = 65, ssthresh = 65; the rest of R4 is
    //   congestion avoidance (no per-ack growth).
    let mut vegas = Vegas::new(MSS, 0);
    let mut now = SECOND;
    for (rtt, expected) in [(BASE, 20), (BASE, 40), (125 * MS, 80), (125 * MS, 65)] {
        now = round(&mut vegas, now, rtt);
        assert_eq!(vegas.packets(), expected);
    }
    assert_eq!(vegas.window(), 65 * MSS);
    assert_eq!(vegas.ssthresh(), Some(65 * MSS));
    assert!((diagnostic(&vegas, "diff_packets").unwrap() - 16.0).abs() < 1e-9);
}

#[test]
fn decreases_when_diff_exceeds_beta() {
    // R4 (125 ms) ended by R5: Diff = 65·25/125 = 13 > β → 64.
    // R5 (125 ms): 64·25/125 = 12.8 → 63. R6: 63·25/125 = 12.6 → 62.
    let (mut vegas, now) = in_avoidance();
    assert_eq!(windows_over_rounds(&mut vegas, now, 125 * MS, 3).0, [64, 63, 62]);
    assert_eq!(
        vegas.ssthresh(),
        Some(62 * MSS),
        "ssthresh follows so slow start does not restart"
    );
}

#[test]
fn increases_when_diff_below_alpha() {
    // R4 (125 ms) still ends with a decrease to 64; then rounds at 101 ms:
    // Diff = 64·1/101 = 0.63 < α → 65; 65/101 = 0.64 → 66; 66/101 → 67.
    let (mut vegas, now) = in_avoidance();
    assert_eq!(windows_over_rounds(&mut vegas, now, 101 * MS, 4).0, [64, 65, 66, 67]);
}

#[test]
fn holds_while_diff_between_alpha_and_beta() {
    // R4 ends with the decrease to 64; rounds at 105 ms: Diff = 64·5/105 = 3.05,
    // inside [2, 4] → hold at 64.
    let (mut vegas, now) = in_avoidance();
    assert_eq!(windows_over_rounds(&mut vegas, now, 105 * MS, 4).0, [64, 64, 64, 64]);
    assert!((diagnostic(&vegas, "diff_packets").unwrap() - 64.0 * 5.0 / 105.0).abs() < 1e-9);
}

#[test]
fn thresholds_come_from_params() {
    // α = 4, β = 6: the 3.05-packet Diff of the hold test is now below α → grow.
    let params = [("alpha", "4"), ("beta", "6")]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let mut vegas = Vegas::from_params(&params, MSS, 0).unwrap();
    let now = through_slow_start(&mut vegas);
    // Exit as before at 65; R4's Diff 13 > 6 → 64; then 64·5/105 = 3.05 < 4 → 65.
    assert_eq!(windows_over_rounds(&mut vegas, now, 105 * MS, 2).0, [64, 65]);
}

/// β below the default α used to index the parameters for the absent `alpha` and panic
/// (`--cc vegas --cc-param beta=1` aborted the agent); now the given key is blamed.
#[test]
fn beta_below_the_default_alpha_is_refused_on_beta() {
    let params = [("beta", "1")]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let error = Vegas::from_params(&params, MSS, 0).expect_err("β < α is refused");
    assert_eq!((error.field.as_str(), error.value.as_str()), ("cc_params.beta", "1"));
    assert!(
        error.problem.contains("must not be below alpha (2)"),
        "{}",
        error.problem
    );
    let params = [("alpha", "3"), ("beta", "1")]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let error = Vegas::from_params(&params, MSS, 0).expect_err("β < α is refused");
    assert_eq!((error.field.as_str(), error.value.as_str()), ("cc_params.alpha", "3"));
}

#[test]
fn too_few_samples_fall_back_to_reno() {
    // Rounds of 2 acks (< 3 samples) in congestion avoidance: Reno's +1 packet per round
    // regardless of the RTT. From 65, a round of 2 acks at 125 ms: the first ends R4
    // (80 samples: decrease to 64), the next 2-ack rounds each add 1.
    let (mut vegas, now) = in_avoidance();
    let mut start = now;
    let mut expected = [64, 65, 66].into_iter();
    for _ in 0..3 {
        for i in 0..2 {
            let at = start + 125 * MS + i * 1_000;
            vegas.on_ack(&ack(at, start, sample(125 * MS, BASE)));
        }
        assert_eq!(vegas.packets(), expected.next().unwrap());
        start += 125 * MS + 1_000;
    }
}

#[test]
fn losses_as_newreno() {
    // 65 packets → ssthresh 32, cwnd 32; a second loss of a packet sent before the
    // first loss is the same event; persistent congestion → 2 packets.
    let (mut vegas, now) = in_avoidance();
    vegas.on_loss(&loss(now + MS, now));
    assert_eq!((vegas.packets(), vegas.ssthresh()), (32, Some(32 * MSS)));
    vegas.on_loss(&loss(now + 2 * MS, now - MS));
    assert_eq!(vegas.packets(), 32);
    vegas.on_loss(&persistent_loss(now + 3 * SECOND, now + SECOND));
    assert_eq!(vegas.window(), 2 * MSS);
}
