//! LEDBAT (libutp and libtorrent flavours) in virtual time, MSS = 1200 bytes,
//! TARGET = 100 ms, base RTT 50 ms.

mod common;

use common::*;
use congestion::ledbat::{DelaySignal, Flavour, Ledbat};
use congestion::{Controller, Nanos, OneWayDelay, Params, Rtt};

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
    let mut utp = Ledbat::new(Flavour::Libutp, MSS, TARGET, DelaySignal::Rtt, 0);
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
    let mut lt = Ledbat::new(Flavour::Libtorrent, MSS, TARGET, DelaySignal::Rtt, 0);
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
    let mut ledbat = Ledbat::new(flavour, MSS, TARGET, DelaySignal::Rtt, 0);
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
    let mut ledbat = Ledbat::new(flavour, MSS, TARGET, DelaySignal::Rtt, 0);
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
        let mut ledbat = Ledbat::new(flavour, MSS, TARGET, DelaySignal::Rtt, 0);
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
    let params: Params = [("flavour", "libtorrent"), ("target", "25"), ("delay_signal", "rtt")]
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
    let mut utp = Ledbat::new(Flavour::Libutp, MSS, TARGET, DelaySignal::Rtt, 0);
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

/// The one-way signal's sample: `owd` plus a clock offset between the two ends, here
/// −5 s (the receiver's clock behind the sender's), so every sample is negative.
const OFFSET: i64 = -5_000_000_000;

fn one_way(ledbat: &mut Ledbat, now: Nanos, owd: Nanos) {
    ledbat.on_one_way_delay(&OneWayDelay {
        now,
        delay: owd as i64 + OFFSET,
    });
}

#[test]
fn one_way_samples_steer_exactly_as_rtt_samples_do() {
    // libutp_per_ack_updates_match_hand_computation with one-way samples carrying the
    // delays and every ack's RTT fixed at the base: the same windows, the offset cancelled.
    let mut utp = Ledbat::new(Flavour::Libutp, MSS, TARGET, DelaySignal::OneWay, 0);
    assert!(utp.wants_one_way_delay());
    for (i, (owd, window)) in [(25 * MS, 3_900), (75 * MS, 4_362), (125 * MS, 4_362), (225 * MS, 3_536)]
        .into_iter()
        .enumerate()
    {
        let now = SECOND + i as Nanos * MS;
        one_way(&mut utp, now, owd);
        ack_with_rtt(&mut utp, now, BASE);
        assert_eq!(utp.window(), window, "one-way delay {owd}");
    }
    assert!(!utp.in_slow_start());
    assert_eq!(queueing_ms(&utp), 200.0);
    assert_eq!(utp.one_way_samples(), 4);
    // base_delay_ms shows the base with the clock offset in it.
    assert_eq!(
        diagnostic(&utp, "base_delay_ms"),
        Some((25 * MS) as f64 / 1e6 + OFFSET as f64 / 1e6)
    );
}

#[test]
fn one_way_without_samples_holds_the_window_and_ignores_the_rtt() {
    let mut utp = Ledbat::new(Flavour::Libutp, MSS, TARGET, DelaySignal::OneWay, 0);
    // Neither an RTT at the base (which would grow it) nor one far above TARGET (which
    // would shrink it) moves the window: no one-way sample, no delay.
    ack_with_rtt(&mut utp, SECOND, BASE);
    ack_with_rtt(&mut utp, SECOND + MS, 500 * MS);
    assert_eq!(utp.window(), 2_400);
    assert_eq!(utp.acks_without_delay(), 2);
    assert_eq!(diagnostic(&utp, "acks_without_delay"), Some(2.0));
    assert_eq!(diagnostic(&utp, "queueing_delay_ms"), None);
    // The first sample: the next ack grows it as the RTT test's first ack does.
    one_way(&mut utp, SECOND + 2 * MS, 30 * MS);
    ack_with_rtt(&mut utp, SECOND + 2 * MS, 500 * MS);
    assert_eq!(utp.window(), 3_900);
    assert_eq!(utp.acks_without_delay(), 2);
}

#[test]
fn rtt_signal_ignores_one_way_samples() {
    let mut utp = Ledbat::new(Flavour::Libutp, MSS, TARGET, DelaySignal::Rtt, 0);
    assert!(!utp.wants_one_way_delay());
    one_way(&mut utp, SECOND, 10 * MS);
    one_way(&mut utp, SECOND, 900 * MS);
    ack_with_rtt(&mut utp, SECOND, BASE);
    assert_eq!(utp.window(), 3_900);
    assert_eq!(utp.one_way_samples(), 0);
}

#[test]
fn delay_signal_comes_from_params_one_way_by_default() {
    let signal = |v: Option<&str>| {
        let params: Params = v
            .map(|v| ("delay_signal".to_string(), v.to_string()))
            .into_iter()
            .collect();
        Ledbat::from_params(&params, MSS, 0).map(|l| l.delay_signal())
    };
    assert_eq!(signal(None), Ok(DelaySignal::OneWay));
    assert_eq!(signal(Some("one-way")), Ok(DelaySignal::OneWay));
    assert_eq!(signal(Some("rtt")), Ok(DelaySignal::Rtt));
    let e = signal(Some("owd")).unwrap_err();
    assert_eq!(e.field, "cc_params.delay_signal");
    assert!(e.problem.contains("one-way, rtt"), "{e}");
}

/// A window-limited sender over a 2 MB/s bottleneck with a 50 ms base RTT (25 ms each
/// way; BDP 100 kB) and an unbounded buffer each way. The data direction queues only the
/// sender's own excess, (window − BDP)/rate; a queue on the reverse (ack) direction, cross
/// traffic the other way, grows from nothing by 30 ms per second. Each round the window's
/// acks arrive spread over the RTT, each after a one-way sample of the data direction
/// (uTP: every ack carries one). Returns the window after each second.
fn reverse_congested(flavour: Flavour, signal: DelaySignal, seconds: u64) -> Vec<u64> {
    const RATE: f64 = 2e6;
    const BDP: f64 = 100_000.0;
    let mut ledbat = Ledbat::new(flavour, MSS, TARGET, signal, 0);
    let mut now = SECOND;
    let mut per_second = Vec::new();
    while now < (seconds + 1) * SECOND {
        let forward = 25 * MS + ((ledbat.window() as f64 - BDP).max(0.0) / RATE * 1e9) as Nanos;
        let reverse = 25 * MS + (now - SECOND) * 30 / 1000;
        let rtt = forward + reverse;
        let n = (ledbat.window() / MSS).max(1);
        for i in 1..=n {
            let t = now + i * rtt / n;
            if signal == DelaySignal::OneWay {
                one_way(&mut ledbat, t, forward);
            }
            ack_with_rtt(&mut ledbat, t, rtt);
        }
        if (now + rtt) / SECOND > now / SECOND {
            per_second.push(ledbat.window());
        }
        now += rtt;
    }
    per_second
}

#[test]
fn reverse_path_congestion_backs_off_rtt_but_not_one_way() {
    // The equilibrium of the data direction alone: queueing = TARGET at BDP + rate·TARGET.
    const EQUILIBRIUM: u64 = 300_000;
    for flavour in [Flavour::Libutp, Flavour::Libtorrent] {
        let one_way = reverse_congested(flavour, DelaySignal::OneWay, 20);
        let rtt = reverse_congested(flavour, DelaySignal::Rtt, 20);
        // RTT: from second 4 the reverse queue alone (> 100 ms) is more than TARGET; the
        // window shrinks every second from then (or stays at the 2-packet minimum).
        assert!(
            rtt[4..].windows(2).all(|w| w[1] < w[0] || w[1] == 2 * MSS),
            "{flavour:?} rtt: {rtt:?}"
        );
        match flavour {
            // libutp's linear growth: up every second, still short of the equilibrium.
            Flavour::Libutp => {
                assert!(
                    one_way.windows(2).all(|w| w[1] > w[0]),
                    "{flavour:?} one-way: {one_way:?}"
                );
                assert!(*one_way.last().unwrap() < EQUILIBRIUM);
                assert_eq!(*rtt.last().unwrap(), 2 * MSS, "{flavour:?} rtt: {rtt:?}");
            }
            // libtorrent's exponential slow start overshoots, then settles where the data
            // direction's own queue is TARGET, the reverse queue not counted.
            Flavour::Libtorrent => {
                let last = *one_way.last().unwrap() as f64;
                assert!(
                    (last / EQUILIBRIUM as f64 - 1.0).abs() < 0.05,
                    "{flavour:?} one-way: {one_way:?}"
                );
            }
        }
        assert!(
            *one_way.last().unwrap() > 2 * rtt.last().unwrap(),
            "{flavour:?}: {one_way:?} vs {rtt:?}"
        );
    }
}
