//! The delay-correlation layer over CUBIC, MSS = 1200 bytes, window wlen = 32.

mod common;

use common::*;
use congestion::cubic::{Cubic, CubicShape};
use congestion::delay_correlation::DelayCorrelation;
use congestion::{Controller, Nanos, Params, Rtt};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

fn layer() -> DelayCorrelation {
    DelayCorrelation::from_params(&Params::new(), MSS).unwrap()
}

/// One ACK frame's worth of events for a single packet: sent at `at` with `in_flight`
/// packets in flight (itself included), acked `rtt` later on a path of minimum RTT
/// `min_rtt`. App-limited acks keep CUBIC at its initial 10 packets, so the sampling
/// probability min(1, 32/(2·10)) is 1 until the clamp changes the window.
fn observe(c: &mut dyn Controller, at: Nanos, in_flight: u64, rtt: Nanos, min_rtt: Nanos, app_limited: bool) {
    c.on_sent(&sent(at, 0, in_flight * MSS));
    let now = at + rtt;
    let rtts = Rtt {
        latest: rtt,
        min: min_rtt,
        smoothed: rtt,
    };
    let acked = if app_limited {
        app_limited_ack(now, at, rtts)
    } else {
        ack(now, at, rtts)
    };
    c.on_ack(&acked);
    c.on_ack_end(now, 0);
}

/// A bloated path's RTT for `x` packets in flight: base 50 ms until x passes the BDP,
/// then one `per_packet` ms more per extra packet (a queue drained at a fixed rate).
fn bloated_rtt_ms(x: u64, bdp: u64, per_packet: f64) -> f64 {
    50.0 + (x.saturating_sub(bdp)) as f64 * per_packet
}

fn ms(value: f64) -> Nanos {
    (value * 1e6).round() as Nanos
}

fn value(c: &dyn Controller, key: &str) -> f64 {
    diagnostic(c, key).unwrap_or_else(|| panic!("no diagnostic {key}"))
}

#[test]
fn fires_on_perfect_correlation_and_sets_estimate_plus_dither() {
    // x = 101..=132 packets, y = 50 + (x − 100)·1 ms: a line with m = 1 ms/packet,
    // b = −50 ms, so with min RTT 50 ms: estimate = (50 − (−50))/1 = 100 packets = BDP.
    // The 32nd observation fills the window (p = 1 throughout): R = 1 ≥ 0.9. It went to
    // slot 31, the second half: dither = max(10, 100/16 = 6.25) = 10 → cwnd = 110 packets.
    let mut dc = layer();
    for (i, x) in (101..=132).enumerate() {
        let at = SECOND * (i as u64 + 1);
        observe(&mut dc, at, x, ms(bloated_rtt_ms(x, 100, 1.0)), 50 * MS, true);
        if i < 31 {
            assert!(!dc.clamp_active(), "window not yet full");
            assert_eq!(dc.window(), 12_000);
        }
    }
    assert!(dc.clamp_active());
    assert!((dc.last_r().unwrap() - 1.0).abs() < 1e-9);
    assert!((dc.last_estimate().unwrap() - 100.0).abs() < 1e-6);
    assert_eq!(value(&dc, "last_slot"), 31.0);
    assert_eq!(dc.window(), 110 * MSS);
    assert_eq!(value(&dc, "clamp_active"), 1.0);
}

#[test]
fn clamp_suppresses_cubic_growth() {
    // While clamped, window-limited acks that do not fill a sample leave the window
    // where the clamp put it (CUBIC sees them as app-limited).
    let mut dc = layer();
    for (i, x) in (101..=132).enumerate() {
        observe(
            &mut dc,
            SECOND * (i as u64 + 1),
            x,
            ms(bloated_rtt_ms(x, 100, 1.0)),
            50 * MS,
            true,
        );
    }
    assert_eq!(dc.window(), 110 * MSS);
    let before = value(&dc, "samples_taken");
    let mut at = 40 * SECOND;
    // Acks of packets the layer never saw sent carry no observation.
    for _ in 0..500 {
        at += MS;
        dc.on_ack(&ack(at, at - 60 * MS, steady_rtt(60 * MS)));
        dc.on_ack_end(at, 0);
    }
    assert_eq!(value(&dc, "samples_taken"), before);
    assert_eq!(dc.window(), 110 * MSS);
}

/// Keeps feeding correlated observations (x cycling over 32 values above `bdp`, RTT on
/// the bloated line) and records (slot, window in packets) each time one is sampled.
fn dither_trace(bdp: u64, per_packet: f64, wanted: usize) -> (DelayCorrelation, Vec<(usize, u64)>) {
    let mut dc = layer();
    let mut trace = Vec::new();
    let mut taken = 0.0;
    let mut at = SECOND;
    let mut i = 0u64;
    while trace.len() < wanted {
        let x = bdp + 1 + i % 32;
        observe(&mut dc, at, x, ms(bloated_rtt_ms(x, bdp, per_packet)), 50 * MS, true);
        if value(&dc, "samples_taken") > taken {
            taken = value(&dc, "samples_taken");
            if dc.clamp_active() {
                trace.push((value(&dc, "last_slot") as usize, dc.window() / MSS));
            }
        }
        at += SECOND;
        i += 1;
        assert!(i < 1_000_000, "sampling never filled the trace");
    }
    (dc, trace)
}

#[test]
fn dither_alternates_between_window_halves() {
    // Estimate 100 (as above): slots 0–15 → 100 + 2 = 102; slots 16–31 → 100 + 10 = 110.
    // After the clamp the window is ~100 packets, so p ≈ 32/(2·105): samples are
    // sparse, but every sample's slot decides its dither.
    let (_, trace) = dither_trace(100, 1.0, 64);
    for &(slot, packets) in &trace {
        assert_eq!(packets, if slot < 16 { 102 } else { 110 }, "slot {slot}");
    }
    assert!(trace.iter().any(|&(slot, _)| slot < 16) && trace.iter().any(|&(slot, _)| slot >= 16));

    // A larger estimate makes the second half's dither estimate/16: BDP 320 packets with
    // 0.25 ms per queued packet: b = 50 − 320·0.25 = −30, m = 0.25 → estimate 320;
    // slots 0–15 → 322, 16–31 → 320 + max(10, 20) = 340.
    let (dc, trace) = dither_trace(320, 0.25, 40);
    assert!((dc.last_estimate().unwrap() - 320.0).abs() < 1e-6);
    for &(slot, packets) in &trace {
        assert_eq!(packets, if slot < 16 { 322 } else { 340 }, "slot {slot}");
    }
}

/// A small deterministic generator for the test's noise (independent of the layer's).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
}

#[test]
fn silent_on_uncorrelated_samples() {
    // x sweeps 1..=60 packets while the RTT is 50 ms plus uniform noise in [0, 20) ms
    // independent of x: |R| stays far below 0.9 (for 32 independent points its standard
    // deviation is ≈ 1/√31 = 0.18). Window-limited acks and a loss mid-way exercise
    // slow start, recovery and the cubic epoch. Plain CUBIC given the same events must
    // follow the same trajectory, byte for byte.
    let mut dc = layer();
    let mut plain = Cubic::new(CubicShape::rfc9438(), MSS);
    let mut noise = Lcg(7);
    let mut at = SECOND;
    for i in 0..2_000u64 {
        let x = 1 + i % 60;
        let rtt = ms(50.0 + 20.0 * noise.next());
        observe(&mut dc, at, x, rtt, 50 * MS, false);
        observe(&mut plain, at, x, rtt, 50 * MS, false);
        if i == 700 {
            dc.on_loss(&loss(at + rtt + 1, at));
            plain.on_loss(&loss(at + rtt + 1, at));
        }
        assert_eq!(dc.window(), plain.window(), "diverged at observation {i}");
        assert!(!dc.clamp_active());
        at += 10 * MS;
    }
    assert!(
        value(&dc, "samples_taken") >= 32.0,
        "the window filled and R was computed"
    );
    assert!(dc.last_r().unwrap().abs() < 0.9);
}

/// A sender behind a bottleneck of one 1200-byte packet per ms with 40 ms of
/// propagation and an unbounded buffer. Min RTT = 1 ms serialisation + 40 ms = 41 ms;
/// BDP = 41 ms × 1 packet/ms = 41 packets. Once more than that is in flight the queue
/// holds the excess and a packet sent with x in flight sees RTT ≈ x ms, so the fitted
/// line is y = 1·x + 0 and meets 41 ms at x = 41.
/// Returns the controller and the window (packets) after each ack.
fn bloated_path(c: &mut dyn Controller, seconds: u64) -> Vec<u64> {
    const SERIALISATION: Nanos = MS;
    const PROPAGATION: Nanos = 40 * MS;
    let mut acks: BinaryHeap<Reverse<(Nanos, Nanos)>> = BinaryHeap::new();
    let mut link_free_at = 0;
    let mut in_flight = 0u64;
    let mut min_rtt = Nanos::MAX;
    let mut now = SECOND;
    let mut windows = Vec::new();
    let mut send_burst = |c: &mut dyn Controller, now: Nanos, in_flight: &mut u64, acks: &mut BinaryHeap<_>| {
        // Packets of one burst leave 1 ns apart so each has its own send time.
        let mut at = now;
        while *in_flight + MSS <= c.window() {
            *in_flight += MSS;
            c.on_sent(&sent(at, 0, *in_flight));
            let depart = at.max(link_free_at) + SERIALISATION;
            link_free_at = depart;
            acks.push(Reverse((depart + PROPAGATION, at)));
            at += 1;
        }
    };
    send_burst(c, now, &mut in_flight, &mut acks);
    while now < seconds * SECOND {
        let Reverse((ack_time, sent_time)) = acks.pop().expect("window never empty");
        now = ack_time;
        in_flight -= MSS;
        let rtt = now - sent_time;
        min_rtt = min_rtt.min(rtt);
        c.on_ack(&ack(
            now,
            sent_time,
            Rtt {
                latest: rtt,
                min: min_rtt,
                smoothed: rtt,
            },
        ));
        c.on_ack_end(now, in_flight);
        windows.push(c.window() / MSS);
        send_burst(c, now, &mut in_flight, &mut acks);
    }
    windows
}

#[test]
fn estimate_approximates_bdp_on_a_bloated_path() {
    // CUBIC alone (no loss on an unbounded buffer) keeps growing the window and the
    // queue; the layer detects the correlation and holds the window at about the BDP
    // of 41 packets. Tolerance: the estimate within 1 packet (2.5%) of 41 — samples
    // taken below the knee (RTT flat at 41 ms) could bend the fit, but once clamped
    // every sample has x ≥ BDP + 2 and lies on the line (measured: 41.000). In the
    // second half of the run the window is estimate + dither: 41 + 2 = 43 to
    // 41 + max(10, 41/16) = 51 packets, ±1 for the estimate's tolerance.
    let mut dc = layer();
    let windows = bloated_path(&mut dc, 30);
    assert!(dc.clamp_active(), "r = {:?}", dc.last_r());
    let estimate = dc.last_estimate().unwrap();
    assert!((estimate - 41.0).abs() <= 1.0, "estimate {estimate} packets vs BDP 41");
    let late = &windows[windows.len() / 2..];
    assert!(
        late.iter().all(|&w| (42..=52).contains(&w)),
        "late windows {:?}..{:?}",
        late.iter().min(),
        late.iter().max()
    );
    assert!(late.contains(&43) && late.contains(&51), "both dithers used");

    let mut plain = Cubic::new(CubicShape::rfc9438(), MSS);
    let plain_windows = bloated_path(&mut plain, 30);
    assert!(*plain_windows.last().unwrap() > 1_000, "CUBIC alone bloats the queue");
}

#[test]
fn sampling_is_deterministic_per_seed() {
    // Same seed, same events → same state; another seed samples different acks.
    let run = |seed: &str| {
        let params: Params = [("seed".to_string(), seed.to_string())].into_iter().collect();
        let mut dc = DelayCorrelation::from_params(&params, MSS).unwrap();
        bloated_path(&mut dc, 10);
        (dc.window(), dc.last_estimate(), value(&dc, "samples_taken"))
    };
    assert_eq!(run("1"), run("1"));
    assert_ne!(run("1"), run("2"));
}
