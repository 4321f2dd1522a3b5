//! LEDBAT (RFC 6817) in the two uTP (BEP 29) flavours studies compare: libutp's and
//! libtorrent's.
//!
//! The delay LEDBAT steers by is chosen per flow (`delay_signal`):
//!
//! - `one-way` (the default): the one-way delay of the data direction, as uTP measures it.
//!   The transport stamps data with the sender's clock and the receiver echoes each stamp
//!   with its own clock's receive time (over QUIC: DATAGRAM frames, see the agent's
//!   `one_way` module); every echo is one [`OneWayDelay`] sample, receive − send, given to
//!   [`Controller::on_one_way_delay`]. queueing delay = latest sample − base, the base
//!   being the minimum of the samples over the bucketed history, so a constant offset
//!   between the two clocks cancels exactly as in uTP. Each ack steers the window by the
//!   latest sample's queueing delay. Chosen: until the first sample arrives the window
//!   holds (acks neither grow nor shrink it; losses still cut it) and the acks are
//!   counted (`acks_without_delay`), so a peer that echoes nothing shows as a window
//!   stuck at its start and a count of acks, never as a silent fallback to the RTT.
//!   Chosen as the default so that the QUIC arm and the two uTP arms of a study differ
//!   by implementation, not by the signal they measure: queueing on the reverse (ack)
//!   path does not count as congestion of the data.
//! - `rtt`: the round-trip time, the only delay quinn's controller interface gives:
//!   queueing delay = latest RTT sample − base (reverse-path queueing counts too).
//!
//! Either way the base is the minimum over a history of one-minute buckets (see
//! `base_delay::BaseDelayHistory`). Chosen: our own bucketed minimum rather than
//! `Rtt::min`, which never rises, so the base can recover after a path change as the
//! spec's history intends. Chosen: no current-delay filter — the latest sample is the
//! current delay (RFC 6817's CURRENT_FILTER = 1), which keeps the controller's input
//! exactly the transport's.

use crate::base_delay::BaseDelayHistory;
use crate::params::ParamReader;
use crate::recovery::RecoveryPeriod;
use crate::window::minimum_window;
use crate::{Acked, ConfigError, Controller, Lost, Nanos, OneWayDelay, Params, Sent};
use std::num::NonZeroU64;

const MS: Nanos = 1_000_000;

/// Which implementation's constants and slow start to follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavour {
    /// libutp (BitTorrent Inc.): gain 3000 bytes per RTT, linear slow start, halve at
    /// most once per 100 ms, 13 one-minute base-delay buckets.
    Libutp,
    /// libtorrent (rasterbar): gain 1500 bytes per RTT, exponential slow start, halve
    /// once per window, 20 buckets.
    Libtorrent,
}

impl Flavour {
    /// Window change per RTT at off_target = 1, in bytes.
    pub fn gain_per_rtt(self) -> f64 {
        match self {
            Flavour::Libutp => 3000.0,
            Flavour::Libtorrent => 1500.0,
        }
    }

    pub fn base_delay_buckets(self) -> u64 {
        match self {
            Flavour::Libutp => 13,
            Flavour::Libtorrent => 20,
        }
    }
}

/// Which delay LEDBAT measures (`cc_params.delay_signal`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DelaySignal {
    /// One-way delay of the data direction from echoed timestamps (`one-way`).
    OneWay,
    /// Round-trip time of each acknowledged packet (`rtt`).
    Rtt,
}

impl DelaySignal {
    /// The name `cc_params.delay_signal` takes.
    pub fn name(self) -> &'static str {
        match self {
            DelaySignal::OneWay => "one-way",
            DelaySignal::Rtt => "rtt",
        }
    }
}

/// libutp's MAX_WINDOW_DECAY: at most one loss reduction per this interval.
const LIBUTP_DECAY_INTERVAL: Nanos = 100 * MS;

/// libutp leaves slow start once the queueing delay passes this fraction of TARGET.
const LIBUTP_SLOW_START_EXIT: f64 = 0.9;

#[derive(Debug, Clone)]
pub struct Ledbat {
    flavour: Flavour,
    mss: u64,
    /// Window in bytes; fractional so sub-byte per-ack gains accumulate.
    window: f64,
    ssthresh: Option<f64>,
    slow_start: bool,
    /// TARGET queueing delay.
    target: Nanos,
    signal: DelaySignal,
    /// Base of the RTT signal.
    rtt_base: BaseDelayHistory<Nanos>,
    /// Base of the one-way signal (receiver's clock − sender's clock: may be negative).
    one_way_base: BaseDelayHistory<i64>,
    /// One-way signal: the latest sample's queueing delay, `None` before any sample.
    one_way_queueing: Option<Nanos>,
    one_way_samples: u64,
    /// One-way signal: acks that arrived before any sample (the window held).
    acks_without_delay: u64,
    last_queueing_delay: Option<Nanos>,
    /// libutp: when the window was last cut for a loss.
    last_cut: Option<Nanos>,
    /// libtorrent: one cut per window of data, i.e. per recovery period.
    recovery: RecoveryPeriod,
}

impl Ledbat {
    pub fn new(flavour: Flavour, mss: u64, target: Nanos, signal: DelaySignal, now: Nanos) -> Self {
        Ledbat {
            flavour,
            mss,
            // Chosen: RFC 6817 §2.4.2 INIT_CWND = 2 MSS (libutp and libtorrent start from
            // one packet; QUIC's 2·MSS minimum window is the floor here).
            window: minimum_window(mss) as f64,
            ssthresh: None,
            slow_start: true,
            target,
            signal,
            rtt_base: BaseDelayHistory::new(now, flavour.base_delay_buckets()),
            one_way_base: BaseDelayHistory::new(now, flavour.base_delay_buckets()),
            one_way_queueing: None,
            one_way_samples: 0,
            acks_without_delay: 0,
            last_queueing_delay: None,
            last_cut: None,
            recovery: RecoveryPeriod::default(),
        }
    }

    /// Keys `flavour` (`libutp` default, or `libtorrent`), `target` (TARGET in
    /// milliseconds, default 100, 0.001..=10000) and `delay_signal` (`one-way` default,
    /// or `rtt`).
    pub fn from_params(params: &Params, mss: u64, now: Nanos) -> Result<Self, ConfigError> {
        ParamReader::read_all(params, "ledbat", |r| Self::from_reader(r, mss, now))
    }

    pub(crate) fn from_reader(reader: &mut ParamReader<'_>, mss: u64, now: Nanos) -> Result<Self, ConfigError> {
        let flavour = match reader.choice("flavour", "libutp", &["libutp", "libtorrent"])? {
            "libtorrent" => Flavour::Libtorrent,
            _ => Flavour::Libutp,
        };
        let target_ms: f64 = reader.number("target", 100.0, 0.001..=10_000.0)?;
        let signal = match reader.choice("delay_signal", "one-way", &["one-way", "rtt"])? {
            "rtt" => DelaySignal::Rtt,
            _ => DelaySignal::OneWay,
        };
        Ok(Self::new(
            flavour,
            mss,
            (target_ms * MS as f64).round() as Nanos,
            signal,
            now,
        ))
    }

    pub fn flavour(&self) -> Flavour {
        self.flavour
    }

    pub fn delay_signal(&self) -> DelaySignal {
        self.signal
    }

    /// One-way samples received so far.
    pub fn one_way_samples(&self) -> u64 {
        self.one_way_samples
    }

    /// One-way signal: acks that found no sample yet (the window held for them).
    pub fn acks_without_delay(&self) -> u64 {
        self.acks_without_delay
    }

    pub fn in_slow_start(&self) -> bool {
        self.slow_start
    }

    pub fn queueing_delay(&self) -> Option<Nanos> {
        self.last_queueing_delay
    }

    fn minimum_window(&self) -> f64 {
        minimum_window(self.mss) as f64
    }

    /// libutp's `apply_ccontrol`: in slow start the window grows by the larger of the
    /// LEDBAT gain and `window_factor × packet size`, where window_factor =
    /// min(acked, cwnd)/max(acked, cwnd) — one MSS per window acked, i.e. linear, and
    /// below the 3000-byte LEDBAT gain whenever MSS < 3000 (so in effect LEDBAT's own
    /// increase). The ack that ends slow start leaves the window as it is, as libutp.
    fn libutp_ack(&mut self, acked: &Acked, gain: f64, queueing_delay: Nanos) {
        let ledbat = (self.window + gain).max(self.minimum_window());
        if !self.slow_start {
            self.window = ledbat;
            return;
        }
        let bytes = acked.bytes as f64;
        let window_factor = bytes.min(self.window) / bytes.max(self.window);
        let slow_start = self.window
            + if acked.app_limited {
                0.0
            } else {
                window_factor * self.mss as f64
            };
        if self.ssthresh.is_some_and(|ssthresh| slow_start > ssthresh) {
            self.slow_start = false;
        } else if queueing_delay as f64 > LIBUTP_SLOW_START_EXIT * self.target as f64 {
            // "even if we're a little under the target delay, we conservatively
            // discontinue the slow start phase"
            self.slow_start = false;
            self.ssthresh = Some(self.window);
        } else {
            self.window = slow_start.max(ledbat);
        }
    }

    /// libtorrent's `do_ledbat`: slow start adds the acked bytes (or the LEDBAT gain if
    /// larger) until the queueing delay reaches TARGET (off_target ≤ 0), the window
    /// would pass ssthresh, or a loss.
    fn libtorrent_ack(&mut self, acked: &Acked, gain: f64, off_target: f64) {
        if self.slow_start {
            let exponential = if acked.app_limited { 0.0 } else { acked.bytes as f64 };
            if off_target <= 0.0 {
                self.slow_start = false;
                // Chosen: remember where slow start ended (libtorrent only clears its flag).
                self.ssthresh = Some(self.window);
            } else if self
                .ssthresh
                .is_some_and(|ssthresh| self.window + exponential > ssthresh)
            {
                self.slow_start = false;
            } else {
                self.window += exponential.max(gain);
                return;
            }
        }
        self.window = (self.window + gain).max(self.minimum_window());
    }

    fn cut_for_loss(&mut self) {
        self.window = (self.window * 0.5).max(self.minimum_window());
        self.slow_start = false;
        self.ssthresh = Some(self.window);
    }
}

impl Controller for Ledbat {
    fn on_sent(&mut self, _sent: &Sent) {}

    /// Chosen: acks during a loss-recovery period still steer the window — the delay
    /// signal is valid whatever happened to other packets, and the uTP implementations
    /// have no NewReno-style recovery freeze.
    fn on_ack(&mut self, acked: &Acked) {
        let queueing_delay = match self.signal {
            DelaySignal::Rtt => {
                let delay = acked.rtt.latest;
                self.rtt_base.record(acked.now, delay);
                let base = self.rtt_base.minimum().unwrap_or(delay);
                delay.saturating_sub(base)
            }
            DelaySignal::OneWay => match self.one_way_queueing {
                Some(q) => q,
                None => {
                    // No sample yet: no delay to steer by, and the RTT is not one.
                    self.acks_without_delay += 1;
                    return;
                }
            },
        };
        self.last_queueing_delay = Some(queueing_delay);
        let target = self.target as f64;
        let off_target = (target - queueing_delay as f64) / target;
        // uTP's form: cwnd += MAX_INCREASE_PER_RTT · off_target · bytes_acked/cwnd, so a
        // window of acks changes cwnd by at most the per-RTT gain; negative off_target
        // shrinks by the same formula (unbounded below, floored at the minimum window).
        // libtorrent scales by bytes in flight rather than cwnd; they agree whenever the
        // window is the limit, and growth happens only then.
        let mut gain = self.flavour.gain_per_rtt() * off_target * acked.bytes as f64 / self.window;
        if acked.app_limited && gain > 0.0 {
            // Chosen: no growth while the window is not the limit (else it would grow
            // without bound on an idle path); shrinking on delay still applies.
            gain = 0.0;
        }
        match self.flavour {
            Flavour::Libutp => self.libutp_ack(acked, gain, queueing_delay),
            Flavour::Libtorrent => self.libtorrent_ack(acked, gain, off_target),
        }
    }

    /// The RTT signal ignores one-way samples (a transport gives them only to a
    /// controller that wants them).
    fn on_one_way_delay(&mut self, sample: &OneWayDelay) {
        if self.signal != DelaySignal::OneWay {
            return;
        }
        self.one_way_base.record(sample.now, sample.delay);
        let base = self.one_way_base.minimum().unwrap_or(sample.delay);
        // The base includes this sample, so the difference is never negative.
        self.one_way_queueing = Some(sample.delay.saturating_sub(base).max(0) as Nanos);
        self.one_way_samples += 1;
    }

    fn wants_one_way_delay(&self) -> bool {
        self.signal == DelaySignal::OneWay
    }

    fn on_loss(&mut self, lost: &Lost) {
        match self.flavour {
            Flavour::Libutp => {
                if self
                    .last_cut
                    .is_none_or(|last| lost.now.saturating_sub(last) >= LIBUTP_DECAY_INTERVAL)
                {
                    self.last_cut = Some(lost.now);
                    self.cut_for_loss();
                }
            }
            Flavour::Libtorrent => {
                if self.recovery.on_loss(lost) {
                    self.cut_for_loss();
                }
            }
        }
        if lost.persistent {
            // Chosen: like a retransmission timeout in either implementation — back to
            // the minimum window and probe up again in slow start (until ssthresh).
            self.window = self.minimum_window();
            self.slow_start = true;
            self.recovery.forget();
        }
    }

    fn on_mtu(&mut self, mtu: NonZeroU64) {
        self.mss = mtu.get();
        self.window = self.window.max(self.minimum_window());
    }

    fn window(&self) -> u64 {
        self.window.round() as u64
    }

    fn ssthresh(&self) -> Option<u64> {
        self.ssthresh.map(|s| s.round() as u64)
    }

    fn name(&self) -> &'static str {
        "ledbat"
    }

    fn diagnostic_names(&self) -> &'static [&'static str] {
        match self.signal {
            DelaySignal::Rtt => &["slow_start", "base_delay_ms", "queueing_delay_ms"],
            DelaySignal::OneWay => &[
                "slow_start",
                "one_way_samples",
                "acks_without_delay",
                "base_delay_ms",
                "queueing_delay_ms",
            ],
        }
    }

    fn diagnostics(&self) -> Vec<(&'static str, f64)> {
        let mut out = vec![("slow_start", if self.slow_start { 1.0 } else { 0.0 })];
        let base = match self.signal {
            DelaySignal::Rtt => self.rtt_base.minimum().map(|b| b as f64),
            DelaySignal::OneWay => {
                out.push(("one_way_samples", self.one_way_samples as f64));
                out.push(("acks_without_delay", self.acks_without_delay as f64));
                self.one_way_base.minimum().map(|b| b as f64)
            }
        };
        if let Some(base) = base {
            // One-way: includes the offset between the two ends' clocks (none when they
            // share one, as the lab's namespaces and the simulator do).
            out.push(("base_delay_ms", base / MS as f64));
        }
        if let Some(queueing) = self.last_queueing_delay {
            out.push(("queueing_delay_ms", queueing as f64 / MS as f64));
        }
        out
    }

    fn box_clone(&self) -> Box<dyn Controller> {
        Box::new(self.clone())
    }
}
