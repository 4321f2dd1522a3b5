//! CUBIC (RFC 9438), with a "chromium" variant that emulates two connections and leaves
//! slow start by Chromium's hybrid slow start, as gQUIC's sender did.
//!
//! Windows are kept in bytes as `f64` so the per-ack increments of RFC 9438 (fractions
//! of a segment) accumulate exactly; the cubic function itself works in segments and
//! seconds as the RFC writes it, converting with the current MSS.

use crate::hybrid_slow_start::{HybridSlowStart, CHROMIUM_MSS};
use crate::params::ParamReader;
use crate::recovery::RecoveryPeriod;
use crate::window::{initial_window, minimum_window};
use crate::{Acked, ConfigError, Controller, Lost, Nanos, Params, Sent};
use std::num::NonZeroU64;

/// RFC 9438 C, in segments per second³.
pub const C: f64 = 0.4;

const NANOS_PER_SECOND: f64 = 1e9;

/// The constants that distinguish the variants.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CubicShape {
    pub variant: &'static str,
    /// Multiplicative decrease factor β.
    pub beta: f64,
    /// Reno-friendly additive increase (segments per RTT) until W_est reaches the window
    /// before the last reduction.
    pub alpha: f64,
    /// The same after W_est has reached it (RFC 9438 §4.3 switches to 1, Reno's rate).
    pub alpha_after_prior: f64,
    /// Fast convergence: W_max ← W·this when a loss comes before W_max was regained.
    pub last_max_backoff: f64,
    /// Slow start also ends on an RTT increase (Chromium's hybrid slow start), not only
    /// on a loss.
    pub hybrid_slow_start: bool,
}

impl CubicShape {
    /// RFC 9438: β = 0.7, α = 3(1 − β)/(1 + β) ≈ 0.529 then 1, fast convergence
    /// W_max ← W(1 + β)/2 = 0.85·W.
    pub fn rfc9438() -> Self {
        let beta = 0.7;
        CubicShape {
            variant: "rfc9438",
            beta,
            alpha: 3.0 * (1.0 - beta) / (1.0 + beta),
            alpha_after_prior: 1.0,
            last_max_backoff: (1.0 + beta) / 2.0,
            hybrid_slow_start: false,
        }
    }

    /// Chromium's QUIC CUBIC emulating N = 2 connections: β_N = (N − 1 + β)/N = 0.85,
    /// α_N = 3N²(1 − β_N)/(1 + β_N) ≈ 0.973 kept throughout (Chromium's `CubicBytes`
    /// never switches α to 1), last-max back-off 0.85 as docs/algorithms.md states.
    /// (Chromium's code scales that back-off for N too — (N − 1 + 0.85)/N = 0.925 — and
    /// tests `cwnd + MSS < W_max`; we follow the spec's 0.85 and RFC 9438's `cwnd < W_max`.)
    /// Slow start ends on a loss or, as Chromium's `TcpCubicSender`, by hybrid slow start.
    pub fn chromium() -> Self {
        let n = 2.0;
        let beta = (n - 1.0 + 0.7) / n;
        let alpha = 3.0 * n * n * (1.0 - beta) / (1.0 + beta);
        CubicShape {
            variant: "chromium",
            beta,
            alpha,
            alpha_after_prior: alpha,
            last_max_backoff: 0.85,
            hybrid_slow_start: true,
        }
    }
}

/// One congestion-avoidance stage: the cubic curve's origin and the Reno estimate.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Epoch {
    /// t = 0 of the curve. Chosen: the first ack that grows the window in congestion
    /// avoidance after the reduction — i.e. after recovery ended (RFC 9438 §4.2 "the
    /// time when the current congestion avoidance stage starts"; Linux does the same).
    /// Shifted forward by application-limited stretches (see `paused_at`).
    start: Nanos,
    /// K in seconds: K = ∛((W_max − cwnd_epoch)/C), RFC 9438 eq. 2. Equal to the spec's
    /// ∛(W_max(1 − β)/C) when cwnd_epoch = β·W_max (a loss without fast convergence);
    /// after fast convergence the RFC 9438 form keeps W(0) = cwnd_epoch.
    k: f64,
    /// W_max in bytes for this stage; raised to cwnd_epoch if the window already
    /// exceeds it (then K = 0 and the curve grows convexly from here).
    w_max: f64,
    /// RFC 9438 §4.3 W_est in bytes, starting at cwnd_epoch.
    w_est: f64,
    /// Start of an application-limited stretch. RFC 9438 §5.8: time the window was not
    /// the limit must not count in t, so the stage start moves forward by its length
    /// when the first window-limited ack comes back (Linux's `epoch_start += delta`).
    paused_at: Option<Nanos>,
}

/// CUBIC congestion control. Slow start and recovery periods are NewReno's.
#[derive(Debug, Clone)]
pub struct Cubic {
    shape: CubicShape,
    mss: u64,
    window: f64,
    ssthresh: Option<f64>,
    /// W_max in bytes: the window at the last congestion event (after fast convergence).
    w_max: f64,
    /// cwnd_prior: the window just before the last reduction.
    window_prior: f64,
    epoch: Option<Epoch>,
    recovery: RecoveryPeriod,
    untouched: bool,
    /// The chromium variant's slow-start exit, and the ACK frame it is checked on.
    hybrid: Option<HybridSlowStart>,
    frame: Option<Frame>,
}

/// What one ACK frame's acknowledgements leave for the hybrid slow-start check at its
/// end. Chromium checks before the frame's acks grow the window and with the RTT of the
/// frame's largest acknowledged packet; the controller sees the acks one by one, the
/// largest last, so the check runs at `on_ack_end` against the window as it was before.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Frame {
    window_before: f64,
    in_slow_start_before: bool,
    latest_rtt: Nanos,
    min_rtt: Nanos,
    /// The latest send time acknowledged while in slow start (ends a round).
    acked_in_slow_start: Option<Nanos>,
}

impl Cubic {
    pub fn new(shape: CubicShape, mss: u64) -> Self {
        Cubic {
            shape,
            mss,
            window: initial_window(mss) as f64,
            ssthresh: None,
            w_max: 0.0,
            window_prior: 0.0,
            epoch: None,
            recovery: RecoveryPeriod::default(),
            untouched: true,
            hybrid: shape.hybrid_slow_start.then(HybridSlowStart::default),
            frame: None,
        }
    }

    /// Key `variant`: `rfc9438` (default) or `chromium`.
    pub fn from_params(params: &Params, mss: u64) -> Result<Self, ConfigError> {
        ParamReader::read_all(params, "cubic", |r| Self::from_reader(r, mss))
    }

    /// Reads `variant` only, leaving unknown-key checking to the caller (the
    /// delay-correlation layer adds its own keys).
    pub(crate) fn from_reader(reader: &mut ParamReader<'_>, mss: u64) -> Result<Self, ConfigError> {
        let shape = match reader.choice("variant", "rfc9438", &["rfc9438", "chromium"])? {
            "chromium" => CubicShape::chromium(),
            _ => CubicShape::rfc9438(),
        };
        Ok(Self::new(shape, mss))
    }

    pub fn shape(&self) -> CubicShape {
        self.shape
    }

    /// W_max in bytes as the last congestion event left it.
    pub fn w_max(&self) -> f64 {
        self.w_max
    }

    /// K in seconds and the curve's origin time, once a congestion-avoidance stage has begun.
    pub fn k_seconds(&self) -> Option<f64> {
        self.epoch.map(|epoch| epoch.k)
    }

    pub fn epoch_start(&self) -> Option<Nanos> {
        self.epoch.map(|epoch| epoch.start)
    }

    /// W_cubic(t) in bytes, t in seconds since the stage began (RFC 9438 eq. 1).
    pub fn cubic_window_at(&self, t: f64) -> Option<f64> {
        self.epoch.map(|epoch| self.cubic_curve(&epoch, t))
    }

    fn cubic_curve(&self, epoch: &Epoch, t: f64) -> f64 {
        C * (t - epoch.k).powi(3) * self.mss as f64 + epoch.w_max
    }

    fn in_slow_start(&self) -> bool {
        self.ssthresh.is_none_or(|ssthresh| self.window < ssthresh)
    }

    fn begin_epoch(&self, now: Nanos) -> Epoch {
        let w_max = self.w_max.max(self.window);
        let k = ((w_max - self.window) / self.mss as f64 / C).cbrt();
        Epoch {
            start: now,
            k,
            w_max,
            w_est: self.window,
            paused_at: None,
        }
    }

    /// The delay-correlation layer's clamp: set the window now, leave slow start (a
    /// queue was detected, exponential growth from here would rebuild it) and restart
    /// the cubic curve from the new window at the next growth.
    pub(crate) fn clamp_window(&mut self, bytes: u64) {
        self.window = bytes.max(minimum_window(self.mss)) as f64;
        self.ssthresh = Some(self.ssthresh.map_or(self.window, |s| s.min(self.window)));
        self.epoch = None;
        self.untouched = false;
    }

    /// One acknowledgement's growth: none in recovery or while application-limited,
    /// the acked bytes in slow start, RFC 9438 in congestion avoidance.
    fn grow(&mut self, acked: &Acked) {
        if self.recovery.covers(acked.sent_time) {
            return;
        }
        if acked.app_limited {
            // No growth while the window is not the limit (RFC 9438 §5.8, RFC 9002
            // §7.8): the window is capped where it is, and the stage's clock stops.
            if let Some(epoch) = self.epoch.as_mut() {
                epoch.paused_at.get_or_insert(acked.now);
            }
            return;
        }
        if let Some(epoch) = self.epoch.as_mut() {
            if let Some(paused_at) = epoch.paused_at.take() {
                epoch.start += acked.now.saturating_sub(paused_at);
            }
        }
        if self.in_slow_start() {
            self.window += acked.bytes as f64;
            return;
        }
        self.avoid_congestion(acked);
    }

    /// The chromium variant's hybrid slow-start check for the ACK frame just
    /// acknowledged. On an exit the frame's slow-start growth is taken back, as Chromium
    /// leaves slow start before it (its congestion-avoidance growth for those few acks
    /// is left out).
    fn settle_frame(&mut self) {
        let (Some(hybrid), Some(frame)) = (self.hybrid.as_mut(), self.frame.take()) else {
            return;
        };
        if frame.in_slow_start_before
            && hybrid.should_exit(
                frame.latest_rtt,
                frame.min_rtt,
                frame.window_before as u64 / CHROMIUM_MSS,
            )
        {
            self.window = frame.window_before;
            self.ssthresh = Some(frame.window_before);
            return;
        }
        if let Some(sent_time) = frame.acked_in_slow_start {
            hybrid.on_acked(sent_time);
        }
    }

    /// Congestion avoidance for one ack (RFC 9438 §4.2–4.4).
    fn avoid_congestion(&mut self, acked: &Acked) {
        let mut epoch = match self.epoch {
            Some(epoch) => epoch,
            None => self.begin_epoch(acked.now),
        };
        let t = acked.now.saturating_sub(epoch.start) as f64 / NANOS_PER_SECOND;
        let mss = self.mss as f64;
        let bytes = acked.bytes as f64;

        // Reno-friendly estimate, RFC 9438's per-ack form W_est += α·segments_acked/cwnd.
        // It counts acks, not time, so it needs no RTT (RFC 8312's closed form
        // W_max·β + α·t/RTT needed one; Linux used the min RTT there).
        let alpha = if epoch.w_est >= self.window_prior {
            self.shape.alpha_after_prior
        } else {
            self.shape.alpha
        };
        epoch.w_est += alpha * bytes * mss / self.window;

        let cubic_now = self.cubic_curve(&epoch, t);
        if cubic_now < epoch.w_est {
            // Reno-friendly region.
            self.window = epoch.w_est;
        } else {
            // Concave or convex region: aim at W_cubic one smoothed RTT ahead (RFC 9438
            // §4.2; Chromium uses the min RTT there), clipped to [cwnd, 1.5·cwnd], and
            // move (target − cwnd)/cwnd segments per segment acked.
            let rtt = acked.rtt.smoothed as f64 / NANOS_PER_SECOND;
            let target = self.cubic_curve(&epoch, t + rtt).clamp(self.window, 1.5 * self.window);
            self.window += (target - self.window) * bytes / self.window;
        }
        self.epoch = Some(epoch);
    }
}

impl Controller for Cubic {
    fn on_sent(&mut self, sent: &Sent) {
        if let Some(hybrid) = self.hybrid.as_mut() {
            hybrid.on_sent(sent.time);
        }
    }

    fn on_ack(&mut self, acked: &Acked) {
        self.untouched = false;
        if self.hybrid.is_some() {
            let (window, in_slow_start) = (self.window, self.in_slow_start());
            let frame = self.frame.get_or_insert(Frame {
                window_before: window,
                in_slow_start_before: in_slow_start,
                latest_rtt: acked.rtt.latest,
                min_rtt: acked.rtt.min,
                acked_in_slow_start: None,
            });
            frame.latest_rtt = acked.rtt.latest;
            frame.min_rtt = acked.rtt.min;
        }
        self.grow(acked);
        if self.in_slow_start() {
            if let Some(frame) = self.frame.as_mut() {
                frame.acked_in_slow_start = Some(
                    frame
                        .acked_in_slow_start
                        .map_or(acked.sent_time, |t| t.max(acked.sent_time)),
                );
            }
        }
    }

    fn on_ack_end(&mut self, _now: Nanos, _bytes_in_flight: u64) {
        self.settle_frame();
    }

    fn on_loss(&mut self, lost: &Lost) {
        // Chromium checks slow start's exit before it handles the frame's losses.
        self.settle_frame();
        self.untouched = false;
        if self.recovery.on_loss(lost) {
            // Fast convergence (RFC 9438 §4.7): a loss before W_max was regained means
            // competing flows; release bandwidth by remembering a lower maximum.
            self.w_max = if self.window < self.w_max {
                self.window * self.shape.last_max_backoff
            } else {
                self.window
            };
            self.window_prior = self.window;
            let reduced = (self.window * self.shape.beta).max(minimum_window(self.mss) as f64);
            self.ssthresh = Some(reduced);
            self.window = reduced;
            self.epoch = None;
        }
        if lost.persistent {
            self.window = minimum_window(self.mss) as f64;
            self.epoch = None;
            self.recovery.forget();
            if let Some(hybrid) = self.hybrid.as_mut() {
                hybrid.restart();
            }
        }
    }

    fn on_mtu(&mut self, mtu: NonZeroU64) {
        self.mss = mtu.get();
        if self.untouched {
            self.window = initial_window(self.mss) as f64;
        }
        self.window = self.window.max(minimum_window(self.mss) as f64);
    }

    /// Rounded, not truncated: 0.7·120000 is 83999.99… in binary floating point.
    fn window(&self) -> u64 {
        self.window.round() as u64
    }

    fn ssthresh(&self) -> Option<u64> {
        self.ssthresh.map(|s| s.round() as u64)
    }

    fn name(&self) -> &'static str {
        "cubic"
    }

    fn diagnostic_names(&self) -> &'static [&'static str] {
        &["w_max", "k_seconds", "w_est"]
    }

    fn diagnostics(&self) -> Vec<(&'static str, f64)> {
        let mut out = vec![("w_max", self.w_max)];
        if let Some(epoch) = &self.epoch {
            out.push(("k_seconds", epoch.k));
            out.push(("w_est", epoch.w_est));
        }
        out
    }

    fn box_clone(&self) -> Box<dyn Controller> {
        Box::new(self.clone())
    }
}
