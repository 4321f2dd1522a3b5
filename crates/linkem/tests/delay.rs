//! Delay and jitter: moments and quantiles per distribution, order preservation,
//! reordering, clamping.
mod common;
use common::*;

use linkem::delay::{Delay, Distribution, Jitter};
use linkem::{Packet, Stage};

const MS: u64 = 1_000_000;
const N: u64 = 200_000;
const FIXED: u64 = 50 * MS;
const J: u64 = MS; // jitter 1 ms ≪ 50 ms fixed: no clamping (P < 1e−40 for normal)

/// Delays (due − arrival) of `n` packets `spacing` ns apart, in arrival order.
fn delays(d: Distribution, reorder: bool, seed: u64, spacing: u64, n: u64) -> Vec<f64> {
    let mut s = Delay::<()>::new(
        FIXED,
        Some(Jitter {
            amount: J,
            distribution: d,
            reorder,
        }),
        seed,
    );
    let arrivals: Vec<_> = (0..n).map(|i| (i, 100, i * spacing)).collect();
    let (out, _) = run_stage(&mut s, &arrivals);
    let mut by_id = vec![0.0; n as usize];
    for (id, _, due) in out {
        by_id[id as usize] = (due - id * spacing) as f64;
    }
    by_id
}

/// Mean within 2.576·σ/√n (99 % CLT interval; σ finite for all four) plus 0.5 ns for the
/// rounding to whole nanoseconds.
fn check_mean(name: &str, xs: &[f64], sigma: f64) {
    let (m, _) = mean_sd(xs);
    let hw = Z99 * sigma / (xs.len() as f64).sqrt() + 0.5;
    assert!(
        (m - FIXED as f64).abs() <= hw,
        "{name}: mean {m}, expected {FIXED} ± {hw}"
    );
}

/// Sample standard deviation within 99 % of its sampling distribution: for finite fourth
/// moment, SE(s) ≈ σ·sqrt((κ − 1)/(4n)) with κ the kurtosis (delta method).
fn check_sd(name: &str, xs: &[f64], sigma: f64, kurtosis: f64) {
    let (_, s) = mean_sd(xs);
    let se = sigma * ((kurtosis - 1.0) / (4.0 * xs.len() as f64)).sqrt();
    assert!(
        (s - sigma).abs() <= Z99 * se + 0.5,
        "{name}: sd {s}, expected {sigma} ± {}",
        Z99 * se
    );
}

/// Empirical P(X > fixed + q·J) against the closed form, within the 99 % binomial interval.
fn check_tail(name: &str, xs: &[f64], q: f64, p: f64) {
    let n = xs.len() as u64;
    let count = xs.iter().filter(|&&x| x > FIXED as f64 + q * J as f64).count() as f64;
    let hw = binomial_halfwidth(n, p) + 1.0;
    assert!(
        (count - n as f64 * p).abs() <= hw,
        "{name}: P(Z > {q}) = {}, expected {p}",
        count / n as f64
    );
}

#[test]
fn uniform_is_uniform_on_plus_minus_jitter() {
    let xs = delays(Distribution::Uniform, true, 1, 100_000, N);
    let sigma = J as f64 / 3f64.sqrt(); // half-width J: σ = J/√3, kurtosis 1.8
    check_mean("uniform", &xs, sigma);
    check_sd("uniform", &xs, sigma, 1.8);
    assert!(xs.iter().all(|&x| x >= (FIXED - J) as f64 && x <= (FIXED + J) as f64));
    for &q in &[-0.9, -0.5, 0.0, 0.5, 0.9] {
        check_tail("uniform", &xs, q, (1.0 - q) / 2.0);
    }
}

#[test]
fn normal_has_sigma_jitter() {
    let xs = delays(Distribution::Normal, true, 2, 100_000, N);
    check_mean("normal", &xs, J as f64);
    check_sd("normal", &xs, J as f64, 3.0);
    for &q in &[-2.0, -1.0, 0.0, 1.0, 2.0] {
        check_tail("normal", &xs, q, normal_tail(q));
    }
}

/// Pareto: shape 3 has a finite variance but an infinite fourth moment, so the sample σ
/// has no usable standard error; the distribution (location and scale included) is
/// checked through its tail function instead: Z = (X − 1.5)/√0.75 with P(X > x) = x⁻³
/// for x ≥ 1, so P(Z > q) = (1.5 + √0.75·q)⁻³.
#[test]
fn pareto_is_standardised_shape_3() {
    let xs = delays(Distribution::Pareto, true, 3, 100_000, N);
    check_mean("pareto", &xs, J as f64);
    let tail = |q: f64| (1.5 + 0.75f64.sqrt() * q).powi(-3);
    for &q in &[-0.5, -0.25, 0.0, 0.5, 1.0, 2.0, 4.0, 8.0] {
        check_tail("pareto", &xs, q, tail(q));
    }
    // Support starts at −1.5/√0.75 ≈ −0.577 σ.
    let min = xs.iter().cloned().fold(f64::MAX, f64::min);
    assert!(min >= FIXED as f64 - 0.5774 * J as f64 - 1.0, "min {min}");
}

/// Paretonormal: Y = (0.25·P + 0.75·N)/√0.625. Its tail is
/// P(Y > q) = E_U[ P(N > (√0.625·q − 0.25·P(U))/0.75) ] with P(U) = (U^(−1/3) − 1.5)/√0.75,
/// U uniform on (0, 1]; computed by the midpoint rule over U (integrand in [0, 1], smooth
/// except near U = 0 where it tends to 1; 2·10⁵ points give ~1e−5 accuracy, far below
/// the binomial half-widths of ~2e−3).
#[test]
fn paretonormal_is_the_rescaled_mix() {
    let xs = delays(Distribution::Paretonormal, true, 4, 100_000, N);
    check_mean("paretonormal", &xs, J as f64);
    let tail = |q: f64| {
        let k = 200_000;
        (0..k)
            .map(|i| {
                let u = (i as f64 + 0.5) / k as f64;
                let p = (u.powf(-1.0 / 3.0) - 1.5) / 0.75f64.sqrt();
                normal_tail((0.625f64.sqrt() * q - 0.25 * p) / 0.75)
            })
            .sum::<f64>()
            / k as f64
    };
    for &q in &[-2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0, 3.0] {
        check_tail("paretonormal", &xs, q, tail(q));
    }
}

#[test]
fn no_jitter_is_a_fixed_delay() {
    let mut s = Delay::<()>::new(FIXED, None, 0);
    let (out, _) = run_stage(&mut s, &[(0, 1, 0), (1, 1, 0), (2, 1, 7)]);
    assert_eq!(out, vec![(0, false, FIXED), (1, false, FIXED), (2, false, FIXED + 7)]);
}

/// Order-preserving mode never reorders, even with packets 10 µs apart and σ = 1 ms.
#[test]
fn order_preserving_mode_never_reorders() {
    for d in [
        Distribution::Uniform,
        Distribution::Normal,
        Distribution::Pareto,
        Distribution::Paretonormal,
    ] {
        let mut s = Delay::<()>::new(
            FIXED,
            Some(Jitter {
                amount: J,
                distribution: d,
                reorder: false,
            }),
            11,
        );
        let arrivals: Vec<_> = (0..N).map(|i| (i, 100, i * 10_000)).collect();
        let (out, _) = run_stage(&mut s, &arrivals);
        assert_eq!(
            out.iter().map(|o| o.0).collect::<Vec<_>>(),
            (0..N).collect::<Vec<_>>(),
            "{d:?}"
        );
        assert!(out.windows(2).all(|w| w[0].2 <= w[1].2));
        // Each due is at least arrival + the clamped sample, and some were raised (ties).
        assert!(
            out.windows(2).filter(|w| w[0].2 == w[1].2).count() > 0,
            "{d:?}: no packet was held back"
        );
    }
}

/// Reordering mode does reorder, hands packets out in due order, and ties stay FIFO.
#[test]
fn reordering_mode_reorders_and_hands_out_in_due_order() {
    let mut s = Delay::<()>::new(
        FIXED,
        Some(Jitter {
            amount: J,
            distribution: Distribution::Normal,
            reorder: true,
        }),
        12,
    );
    let arrivals: Vec<_> = (0..N).map(|i| (i, 100, i * 10_000)).collect();
    let (out, _) = run_stage(&mut s, &arrivals);
    assert!(out.windows(2).all(|w| w[0].2 <= w[1].2), "handed out in due order");
    let inversions = out.windows(2).filter(|w| w[0].0 > w[1].0).count();
    assert!(inversions > N as usize / 10, "only {inversions} reorderings");

    // Ties: uniform jitter with amount 1 ns gives dues in {at−1, at, at+1}: packets at the
    // same instant with the same due leave in arrival order.
    let mut s = Delay::<()>::new(
        FIXED,
        Some(Jitter {
            amount: 1,
            distribution: Distribution::Uniform,
            reorder: true,
        }),
        13,
    );
    for i in 0..1000 {
        s.enqueue(Packet::new(i, 1, ()), 0).unwrap();
    }
    let mut out = Vec::new();
    while let Some((p, due)) = s.dequeue(u64::MAX) {
        out.push((due, p.id));
    }
    let mut sorted = out.clone();
    sorted.sort();
    assert_eq!(out, sorted, "ties by arrival order");
}

/// Clamping: with zero fixed delay the total is clamped at 0 (biasing the mean upwards,
/// as documented): uniform ±1 ms gives 0 for half the packets.
#[test]
fn negative_totals_are_clamped_to_zero() {
    let mut s = Delay::<()>::new(
        0,
        Some(Jitter {
            amount: J,
            distribution: Distribution::Uniform,
            reorder: true,
        }),
        14,
    );
    let arrivals: Vec<_> = (0..N).map(|i| (i, 1, 5 * MS + i)).collect();
    let (out, _) = run_stage(&mut s, &arrivals);
    let zero = out.iter().filter(|o| o.2 == 5 * MS + o.0).count() as u64;
    assert!(out.iter().all(|o| o.2 >= 5 * MS + o.0));
    // P(sample ≤ 0) = 1/2 (+ the rounding sliver of [0, 0.5) ns, ~2.5e−7).
    assert!(
        (zero as f64 - N as f64 / 2.0).abs() <= binomial_halfwidth(N, 0.5) + 1.0,
        "{zero}"
    );
}

#[test]
fn same_seed_same_delays_different_seed_different() {
    let a = delays(Distribution::Paretonormal, true, 21, 1_000, 10_000);
    let b = delays(Distribution::Paretonormal, true, 21, 1_000, 10_000);
    let c = delays(Distribution::Paretonormal, true, 22, 1_000, 10_000);
    assert_eq!(a, b);
    assert_ne!(a, c);
}
