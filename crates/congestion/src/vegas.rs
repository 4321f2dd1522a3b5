//! TCP Vegas (Brakmo & Peterson 1995) as docs/algorithms.md states it, round structure after
//! Linux's `tcp_vegas.c`. The window is kept in whole packets; in bytes it is
//! packets·MSS.

use crate::params::{param_error, ParamReader};
use crate::recovery::RecoveryPeriod;
use crate::window::{initial_window, minimum_window};
use crate::{Acked, ConfigError, Controller, Lost, Nanos, Params, Sent};
use std::num::NonZeroU64;

/// Minimum window in packets (RFC 9002's 2·MSS).
const MIN_PACKETS: u64 = 2;

/// A round trip's worth of RTT samples.
#[derive(Debug, Clone, Copy)]
struct Round {
    /// When the round began; it ends with the first ack of a packet sent at or after
    /// this time (Linux: an ack beyond `beg_snd_nxt`).
    start: Nanos,
    /// The RTT Vegas compares with BaseRTT. Chosen: the minimum of the round's samples,
    /// as Linux does — it filters out delayed acks and other one-off spikes.
    min_rtt: Option<Nanos>,
    samples: u32,
}

impl Round {
    fn new(start: Nanos) -> Self {
        Round {
            start,
            min_rtt: None,
            samples: 0,
        }
    }

    fn record(&mut self, rtt: Nanos) {
        self.min_rtt = Some(self.min_rtt.map_or(rtt, |min| min.min(rtt)));
        self.samples += 1;
    }
}

/// Vegas: once per round trip compare the expected rate (cwnd/BaseRTT) with the actual
/// one (cwnd/RTT); their difference, as packets queued, steers the window by ±1.
#[derive(Debug, Clone)]
pub struct Vegas {
    mss: u64,
    /// Window in packets.
    cwnd: u64,
    /// Slow-start threshold in packets.
    ssthresh: Option<u64>,
    /// Bytes acked in slow start not yet a whole packet of growth.
    slow_start_credit: u64,
    /// Below this many packets queued: grow (α).
    alpha: f64,
    /// Above this many: shrink (β).
    beta: f64,
    /// Above this many in slow start: leave it (γ).
    gamma: f64,
    /// BaseRTT: the minimum of all RTT samples seen.
    base_rtt: Option<Nanos>,
    round: Round,
    /// Diff (packets) at the last round's end, for logging.
    last_diff: Option<f64>,
    recovery: RecoveryPeriod,
    untouched: bool,
}

impl Vegas {
    pub fn new(mss: u64, now: Nanos) -> Self {
        Self::with_thresholds(mss, now, 2.0, 4.0, 1.0)
    }

    pub fn with_thresholds(mss: u64, now: Nanos, alpha: f64, beta: f64, gamma: f64) -> Self {
        Vegas {
            mss,
            cwnd: (initial_window(mss) / mss).max(MIN_PACKETS),
            ssthresh: None,
            slow_start_credit: 0,
            alpha,
            beta,
            gamma,
            base_rtt: None,
            round: Round::new(now),
            last_diff: None,
            recovery: RecoveryPeriod::default(),
            untouched: true,
        }
    }

    /// Keys `alpha` (2), `beta` (4), `gamma` (1), in packets, each 0..=1000, with
    /// alpha ≤ beta.
    pub fn from_params(params: &Params, mss: u64, now: Nanos) -> Result<Self, ConfigError> {
        ParamReader::read_all(params, "vegas", |r| Self::from_reader(r, mss, now))
    }

    pub(crate) fn from_reader(reader: &mut ParamReader<'_>, mss: u64, now: Nanos) -> Result<Self, ConfigError> {
        let alpha = reader.number("alpha", 2.0, 0.0..=1000.0)?;
        let beta = reader.number("beta", 4.0, 0.0..=1000.0)?;
        let gamma = reader.number("gamma", 1.0, 0.0..=1000.0)?;
        if alpha > beta {
            // Blame the key that was given: with only beta set, alpha is its default.
            return Err(match reader.given("alpha") {
                Some(text) => param_error("alpha", text, format!("must not exceed beta ({beta})")),
                None => param_error(
                    "beta",
                    reader.given("beta").unwrap_or_default(),
                    format!("must not be below alpha ({alpha})"),
                ),
            });
        }
        Ok(Self::with_thresholds(mss, now, alpha, beta, gamma))
    }

    /// Window in packets.
    pub fn packets(&self) -> u64 {
        self.cwnd
    }

    fn in_slow_start(&self) -> bool {
        self.ssthresh.is_none_or(|ssthresh| self.cwnd < ssthresh)
    }

    fn slow_start(&mut self, acked: &Acked) {
        if acked.app_limited {
            return;
        }
        self.slow_start_credit += acked.bytes;
        self.cwnd += self.slow_start_credit / self.mss;
        self.slow_start_credit %= self.mss;
    }

    /// The once-per-RTT decision at the end of a round.
    fn end_round(&mut self, acked: &Acked) {
        let round = self.round;
        self.round = Round::new(acked.now);
        let (Some(rtt), Some(base)) = (round.min_rtt, self.base_rtt) else {
            self.reno_fallback(acked);
            return;
        };
        if round.samples < 3 {
            self.reno_fallback(acked);
            return;
        }
        let cwnd = self.cwnd as f64;
        // Diff in packets, as docs/algorithms.md states it: cwnd·(RTT − BaseRTT)/RTT, the
        // (expected − actual) rate times RTT, i.e. the packets sitting in queues.
        // (Linux divides by BaseRTT instead, which is larger by the factor RTT/BaseRTT.)
        let diff = cwnd * (rtt - base) as f64 / rtt as f64;
        self.last_diff = Some(diff);
        if self.in_slow_start() {
            if diff > self.gamma {
                // Leave slow start at the window the path carries without queueing,
                // plus one: target = cwnd·BaseRTT/RTT.
                let target = (cwnd * base as f64 / rtt as f64) as u64;
                let cwnd = self.ssthresh.map_or(target + 1, |s| s.min(target + 1)).max(MIN_PACKETS);
                self.cwnd = cwnd;
                // ssthresh = the new window: no longer below it, so congestion avoidance.
                self.ssthresh = Some(cwnd);
            } else {
                self.slow_start(acked);
            }
        } else if diff > self.beta {
            self.cwnd = (self.cwnd - 1).max(MIN_PACKETS);
            // Keep cwnd ≥ ssthresh so shrinking does not drop us back into slow start.
            self.ssthresh = self.ssthresh.map(|s| s.min(self.cwnd));
        } else if diff < self.alpha && !acked.app_limited {
            // App-limited: the path was not being tested, so no probe upwards.
            self.cwnd += 1;
        }
    }

    /// Fewer than 3 RTT samples in the round: too few to trust Diff. Chosen, after
    /// Linux: behave as Reno for the round — slow start continues per ack, congestion
    /// avoidance adds one packet (Reno's per-RTT increase).
    fn reno_fallback(&mut self, acked: &Acked) {
        if self.in_slow_start() {
            self.slow_start(acked);
        } else if !acked.app_limited {
            self.cwnd += 1;
        }
    }
}

impl Controller for Vegas {
    fn on_sent(&mut self, _sent: &Sent) {}

    fn on_ack(&mut self, acked: &Acked) {
        self.untouched = false;
        let rtt = acked.rtt.latest;
        // A zero RTT (a driver's artefact) would divide by zero in Diff: not a sample.
        if rtt > 0 {
            self.base_rtt = Some(self.base_rtt.map_or(rtt, |base| base.min(rtt)));
        }
        let round_over = acked.sent_time >= self.round.start;
        if self.recovery.covers(acked.sent_time) {
            // Losses as NewReno: no growth, and no Vegas decision on a round disturbed
            // by the reduction.
            if round_over {
                self.round = Round::new(acked.now);
            }
        } else if round_over {
            self.end_round(acked);
        } else if self.in_slow_start() {
            self.slow_start(acked);
        }
        // Chosen: the ack that ends a round is for a packet sent in the next round, so
        // its sample counts there (Linux counts it in the ending round).
        if rtt > 0 {
            self.round.record(rtt);
        }
    }

    fn on_loss(&mut self, lost: &Lost) {
        self.untouched = false;
        if self.recovery.on_loss(lost) {
            let ssthresh = self.cwnd / 2;
            self.ssthresh = Some(ssthresh);
            self.cwnd = ssthresh.max(MIN_PACKETS);
            self.slow_start_credit = 0;
        }
        if lost.persistent {
            self.cwnd = MIN_PACKETS;
            self.slow_start_credit = 0;
            self.recovery.forget();
        }
    }

    /// The window stays the same number of packets.
    fn on_mtu(&mut self, mtu: NonZeroU64) {
        self.mss = mtu.get();
        if self.untouched {
            self.cwnd = (initial_window(self.mss) / self.mss).max(MIN_PACKETS);
        }
    }

    fn window(&self) -> u64 {
        (self.cwnd * self.mss).max(minimum_window(self.mss))
    }

    fn ssthresh(&self) -> Option<u64> {
        self.ssthresh.map(|s| s * self.mss)
    }

    fn name(&self) -> &'static str {
        "vegas"
    }

    fn diagnostic_names(&self) -> &'static [&'static str] {
        &["base_rtt_ms", "diff_packets"]
    }

    fn diagnostics(&self) -> Vec<(&'static str, f64)> {
        let mut out = Vec::new();
        if let Some(base) = self.base_rtt {
            out.push(("base_rtt_ms", base as f64 / 1e6));
        }
        if let Some(diff) = self.last_diff {
            out.push(("diff_packets", diff));
        }
        out
    }

    fn box_clone(&self) -> Box<dyn Controller> {
        Box::new(self.clone())
    }
}
