//! LEDBAT (libutp and libtorrent flavours) in virtual time, MSS = 1200 bytes,
//! TARGET = 100 ms, base RTT 50 ms.

mod common;

use common::*;
use congestion::ledbat::{Flavour, Ledbat};
use congestion::{Controller, Nanos, Params, Rtt};

const BASE: Nanos = 50 * MS;
const TARGET: Nanos = 100 * MS;

/// An ack whose RTT sample is `rtt` (the path minimum is BASE).
fn ack_with_rtt(ledbat: &mut Ledbat, now: Nanos, rtt: Nanos) {
    ledbat.on_ack(&ack(
        now,
        now - rtt,
        Rtt {
            latest: rtt,
            min: BASE,
            smoothed: rtt,
        },
    ));
}

fn queueing_ms(ledbat: &Ledbat) -> f64 {
    diagnostic(ledbat, "queueing_delay_ms").unwrap()
}

#[test]
fn libutp_per_ack_updates_match_hand_computation() {
    let mut utp = Ledbat::new(Flavour::Libutp, MSS, TARGET, 0);
    assert_eq!(utp.window(), 2_400, "INIT_CWND = 2 MSS");
    // RTT 50 ms (the base): queueing 0, off_target 1, gain = 3000·1·1200/2400 = 1500;
    // slow start: window_factor 1200/2400 = 0.5 → +600; the larger wins: 3900.
    ack_with_rtt(&mut utp, SECOND, BASE);
    assert_eq!(utp.window(), 3_900);
    // RTT 100 ms: queueing 50, off_target 0.5, gain = 3000·0.5·1200/3900 = 461.54;
    // slow start +1200·1200/3900 = 369.23; → 4361.54.
    ack_with_rtt(&mut utp, SECOND + MS, 100 * MS);
    assert_eq!(utp.window(), 4_362);
    assert!(utp.in_slow_start());
    // RTT 150 ms: queueing 100 > 0.9·TARGET: slow start ends, window unchanged,
    // ssthresh = window.
    ack_with_rtt(&mut utp, SECOND + 2 * MS, 150 * MS);
    assert!(!utp.in_slow_start());
    assert_eq!((utp.window(), utp.ssthresh()), (4_362, Some(4_362)));
    // RTT 250 ms: queueing 200, off_target −1, gain = −3000·1200/4361.54 = −825.40 → 3536.14.
    ack_with_rtt(&mut utp, SECOND + 3 * MS, 250 * MS);
    assert_eq!(utp.window(), 3_536);
    assert_eq!(queueing_ms(&utp), 200.0);
}

#[test]
fn libtorrent_slow_start_is_exponential_until_target() {
    // Each ack adds max(acked = 1200, gain ≤ 1500·1200/cwnd ≤ 750) = 1200: a round of
    // acks doubles the window. 2400 → 4800 → 9600 → 19200.
    let mut lt = Ledbat::new(Flavour::Libtorrent, MSS, TARGET, 0);
    let mut now = SECOND;
    for expected in [4_800, 9_600, 19_200] {
        for _ in 0..lt.window() / MSS {
            now += MS;
            ack_with_rtt(&mut lt, now, BASE + 20 * MS * (now / SECOND - 1));
        }
        assert_eq!(lt.window(), expected);
    }
    // Queueing delay reaches TARGET (RTT 150 ms): off_target 0 → slow start ends,
    // ssthresh = 19200, gain 0. Then RTT 100 ms: off_target 0.5, linear:
    // +1500·0.5·1200/19200 = 46.875 → 19246.875.
    ack_with_rtt(&mut lt, now + MS, BASE + TARGET);
    assert!(!lt.in_slow_start());
    assert_eq!((lt.window(), lt.ssthresh()), (19_200, Some(19_200)));
    ack_with_rtt(&mut lt, now + 2 * MS, 100 * MS);
    assert_eq!(lt.window(), 19_247);
}

/// A window-limited sender behind a 1 MB/s bottleneck with a 50 ms base RTT and an
/// unbounded buffer: a round's acks all see queueing delay (window − BDP)/rate, with
/// BDP = 1e6·0.05 = 50000 bytes. LEDBAT's equilibrium is where the queueing delay is
/// TARGET: window = BDP + rate·TARGET = 50000 + 100000 = 150000 bytes.
/// Returns, per round, (queueing delay ms, window before, window after).
fn bottleneck(flavour: Flavour, seconds: u64) -> (Ledbat, Vec<(f64, u64, u64)>) {
    let rate = 1e6;
    let bdp = 50_000.0;
    let mut ledbat = Ledbat::new(flavour, MSS, TARGET, 0);
    let mut now = SECOND;
    let mut rounds = Vec::new();
    while now < seconds * SECOND {
        let before = ledbat.window();
        let queueing = ((before as f64 - bdp).max(0.0) / rate * 1e9) as Nanos;
        let rtt = BASE + queueing;
        let n = (before / MSS).max(1);
        for i in 1..=n {
            ack_with_rtt(&mut ledbat, now + i * rtt / n, rtt);
        }
        now += rtt;
        rounds.push((queueing as f64 / 1e6, before, ledbat.window()));
    }
    (ledbat, rounds)
}

fn approaches_target(flavour: Flavour) {
    let (ledbat, rounds) = bottleneck(flavour, 200);
    // Below TARGET the window grows, above it shrinks (rounds with a slow-start exit
    // or right at the boundary excepted: within 1 ms of TARGET the change is tiny).
    for &(queueing, before, after) in &rounds {
        if queueing < 99.0 {
            assert!(
                after > before,
                "{flavour:?}: queueing {queueing} ms, {before} → {after}"
            );
        } else if queueing > 101.0 {
            assert!(
                after < before,
                "{flavour:?}: queueing {queueing} ms, {before} → {after}"
            );
        }
    }
    // Converged: within 2% of the 150000-byte equilibrium, queueing within 3 ms of TARGET.
    let window = ledbat.window() as f64;
    assert!((window - 150_000.0).abs() < 3_000.0, "{flavour:?}: window {window}");
    assert!(
        (queueing_ms(&ledbat) - 100.0).abs() < 3.0,
        "{flavour:?}: {}",
        queueing_ms(&ledbat)
    );
}

#[test]
fn libutp_approaches_target() {
    approaches_target(Flavour::Libutp);
}

#[test]
fn libtorrent_approaches_target() {
    // Exponential slow start doubles 2400 → … → 76800 (queueing 26.8 ms) → 153600,
    // whose round sees queueing 103.6 ms ≥ TARGET and ends slow start on its first ack;
    // from there the window shrinks linearly to the equilibrium.
    let (_, rounds) = bottleneck(Flavour::Libtorrent, 200);
    let peak = rounds.iter().map(|&(_, before, _)| before).max().unwrap();
    assert_eq!(peak, 153_600);
    approaches_target(Flavour::Libtorrent);
}

/// Grows a LEDBAT with zero queueing delay to above 12000 bytes, returns it and the time.
fn grown(flavour: Flavour) -> (Ledbat, Nanos) {
    let mut ledbat = Ledbat::new(flavour, MSS, TARGET, 0);
    let mut now = SECOND;
    while ledbat.window() < 12_000 {
        now += MS;
        ack_with_rtt(&mut ledbat, now, BASE);
    }
    (ledbat, now)
}

#[test]
fn libutp_halves_at_most_once_per_100ms() {
    // w → w/2 at t; a loss 50 ms later is ignored; 150 ms after t → w/4.
    let (mut utp, now) = grown(Flavour::Libutp);
    let w = utp.window() as f64;
    utp.on_loss(&loss(now + MS, now));
    assert_eq!(utp.window(), (w / 2.0).round() as u64);
    assert!(!utp.in_slow_start());
    utp.on_loss(&loss(now + 51 * MS, now + 50 * MS));
    assert_eq!(utp.window(), (w / 2.0).round() as u64);
    utp.on_loss(&loss(now + 101 * MS, now + 100 * MS));
    assert_eq!(utp.window(), (w / 4.0).round() as u64, "exactly 100 ms later: allowed");
}

#[test]
fn libtorrent_halves_once_per_window() {
    // Loss at t: w/2. Another loss of a packet sent before t: same window, ignored —
    // even 500 ms later. A loss of a packet sent after t: w/4.
    let (mut lt, now) = grown(Flavour::Libtorrent);
    let w = lt.window() as f64;
    lt.on_loss(&loss(now + MS, now));
    assert_eq!(lt.window(), (w / 2.0).round() as u64);
    lt.on_loss(&loss(now + 500 * MS, now - 10 * MS));
    assert_eq!(lt.window(), (w / 2.0).round() as u64);
    lt.on_loss(&loss(now + 501 * MS, now + 2 * MS));
    assert_eq!(lt.window(), (w / 4.0).round() as u64);
}

#[test]
fn persistent_congestion_restarts_from_minimum_window() {
    for flavour in [Flavour::Libutp, Flavour::Libtorrent] {
        let (mut ledbat, now) = grown(flavour);
        ledbat.on_loss(&persistent_loss(now + SECOND, now + MS));
        assert_eq!(ledbat.window(), 2 * MSS);
        assert!(ledbat.in_slow_start());
    }
}

#[test]
fn base_delay_history_forgets_old_minutes() {
    // One 50 ms sample in minute 0, then 80 ms samples once a minute. libutp keeps 13
    // buckets: minute 0 still counts in minute 12 (queueing 30 ms) and has aged out in
    // minute 13 (the base is now 80: queueing 0). libtorrent keeps 20.
    for (flavour, buckets) in [(Flavour::Libutp, 13), (Flavour::Libtorrent, 20)] {
        let mut ledbat = Ledbat::new(flavour, MSS, TARGET, 0);
        ack_with_rtt(&mut ledbat, SECOND, BASE);
        for minute in 1..=buckets {
            ack_with_rtt(&mut ledbat, minute * 60 * SECOND + SECOND, 80 * MS);
            let expected = if minute < buckets { 30.0 } else { 0.0 };
            assert_eq!(queueing_ms(&ledbat), expected, "{flavour:?} minute {minute}");
        }
    }
}

#[test]
fn target_and_flavour_come_from_params() {
    // target = 25 ms: queueing 20 ms gives off_target 0.2; libtorrent's first ack in
    // slow start adds max(1200, 1500·0.2·1200/2400 = 150) = 1200.
    let params: Params = [("flavour", "libtorrent"), ("target", "25")]
        .into_iter()
        .map(|(k, v)| (k.into(), v.into()))
        .collect();
    let mut lt = Ledbat::from_params(&params, MSS, 0).unwrap();
    assert_eq!(lt.flavour(), Flavour::Libtorrent);
    ack_with_rtt(&mut lt, SECOND, BASE);
    ack_with_rtt(&mut lt, SECOND + MS, BASE + 20 * MS);
    assert_eq!(lt.window(), 4_800);
    // 30 ms > 25 ms: slow start ends; off_target −0.2: −1500·0.2·1200/4800 = −75 → 4725.
    ack_with_rtt(&mut lt, SECOND + 2 * MS, BASE + 30 * MS);
    assert_eq!(lt.window(), 4_725);
    assert!(Ledbat::from_params(&Params::new(), MSS, 0).unwrap().flavour() == Flavour::Libutp);
}

#[test]
fn app_limited_acks_do_not_grow_but_delay_still_shrinks() {
    let mut utp = Ledbat::new(Flavour::Libutp, MSS, TARGET, 0);
    utp.on_ack(&app_limited_ack(
        SECOND,
        SECOND - BASE,
        Rtt {
            latest: BASE,
            min: BASE,
            smoothed: BASE,
        },
    ));
    assert_eq!(utp.window(), 2_400);
    let (mut utp, now) = grown(Flavour::Libutp);
    let w = utp.window();
    ack_with_rtt(&mut utp, now + MS, 200 * MS); // leaves slow start (queueing 150 > 90)
    utp.on_ack(&app_limited_ack(
        now + 2 * MS,
        now - 300 * MS,
        Rtt {
            latest: 300 * MS,
            min: BASE,
            smoothed: BASE,
        },
    ));
    assert!(utp.window() < w);
}
