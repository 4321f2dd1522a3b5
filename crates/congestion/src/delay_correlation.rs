//! Nowlan's delay-correlation layer (2014) over CUBIC: bufferbloat shows as a strong
//! linear correlation between packets in flight and RTT; when it appears, the window
//! is clamped at the in-flight count where the fitted line meets the minimum RTT
//! (≈ the bandwidth-delay product), plus a small dither that keeps probing.

use crate::correlation::CorrelationWindow;
use crate::cubic::Cubic;
use crate::params::ParamReader;
use crate::prng::SplitMix64;
use crate::window::minimum_window;
use crate::{Acked, ConfigError, Controller, Lost, Nanos, Params, Sent};
use std::collections::BTreeMap;
use std::num::NonZeroU64;

/// Default seed of the sampling generator (any fixed value; runs differ only if asked).
pub const DEFAULT_SEED: u64 = 0x5EED_DE1A_7C0E_2014;

/// Bound on remembered send times: a driver that never acks nor loses would otherwise
/// grow the map without end. Far above any window in packets.
const MAX_TRACKED_SENDS: usize = 1 << 20;

/// Bound on the estimate in packets, against a nearly flat fitted line.
const MAX_ESTIMATE_PACKETS: f64 = 1e9;

/// How much to add to the estimate when setting the window.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Dither {
    /// Packets added while the write index is in the window's first half (2).
    pub small: f64,
    /// Otherwise max(large_min, estimate/large_divisor) packets (10, 16).
    pub large_min: f64,
    pub large_divisor: f64,
}

impl Default for Dither {
    fn default() -> Self {
        Dither {
            small: 2.0,
            large_min: 10.0,
            large_divisor: 16.0,
        }
    }
}

/// The newest-sent packet newly acked in the current ACK frame.
#[derive(Debug, Clone, Copy)]
struct Observation {
    sent_time: Nanos,
    in_flight: u64,
    rtt: Nanos,
    min_rtt: Nanos,
}

#[derive(Debug, Clone)]
pub struct DelayCorrelation {
    cubic: Cubic,
    mss: u64,
    /// x per packet: send time → packets in flight including it, ⌈bytes_in_flight/MSS⌉.
    /// Chosen: keyed by send time as the interface identifies acked packets by it;
    /// packets sent in the same nanosecond (one batch) share the batch's last x.
    in_flight_at_send: BTreeMap<Nanos, u64>,
    frame_newest: Option<Observation>,
    window: CorrelationWindow,
    threshold: f64,
    dither: Dither,
    rng: SplitMix64,
    clamp_active: bool,
    last_r: Option<f64>,
    /// Last estimate in packets (before dither).
    last_estimate: Option<f64>,
    /// Observations that passed sampling, and the slot the last one went to.
    samples_taken: u64,
    last_slot: Option<usize>,
}

impl DelayCorrelation {
    pub fn new(cubic: Cubic, mss: u64, window_len: usize, threshold: f64, dither: Dither, seed: u64) -> Self {
        DelayCorrelation {
            cubic,
            mss,
            in_flight_at_send: BTreeMap::new(),
            frame_newest: None,
            window: CorrelationWindow::new(window_len),
            threshold,
            dither,
            rng: SplitMix64::new(seed),
            clamp_active: false,
            last_r: None,
            last_estimate: None,
            samples_taken: 0,
            last_slot: None,
        }
    }

    /// Keys: `window` (wlen, 32, 4..=4096), `threshold` (0.9, 0..=1), `seed` (u64,
    /// [`DEFAULT_SEED`]), `dither_small` (2), `dither_large_min` (10), each 0..=10000
    /// packets, `dither_large_divisor` (16, 1..=1000000), and CUBIC's `variant`.
    pub fn from_params(params: &Params, mss: u64) -> Result<Self, ConfigError> {
        ParamReader::read_all(params, "delay-correlation", |r| Self::from_reader(r, mss))
    }

    pub(crate) fn from_reader(reader: &mut ParamReader<'_>, mss: u64) -> Result<Self, ConfigError> {
        let cubic = Cubic::from_reader(reader, mss)?;
        let window_len = reader.number("window", 32usize, 4..=4096)?;
        let threshold = reader.number("threshold", 0.9, 0.0..=1.0)?;
        let seed = reader.number("seed", DEFAULT_SEED, 0..=u64::MAX)?;
        let dither = Dither {
            small: reader.number("dither_small", 2.0, 0.0..=10_000.0)?,
            large_min: reader.number("dither_large_min", 10.0, 0.0..=10_000.0)?,
            large_divisor: reader.number("dither_large_divisor", 16.0, 1.0..=1_000_000.0)?,
        };
        Ok(Self::new(cubic, mss, window_len, threshold, dither, seed))
    }

    pub fn clamp_active(&self) -> bool {
        self.clamp_active
    }

    pub fn last_r(&self) -> Option<f64> {
        self.last_r
    }

    pub fn last_estimate(&self) -> Option<f64> {
        self.last_estimate
    }

    /// One ACK frame's observation: sample it, and when the window is full decide.
    fn observe(&mut self, observation: Observation) {
        // p = min(1, wlen/(2·cwnd_packets)): the window spans about two congestion
        // windows' worth of acks whatever the window size. One draw per observation,
        // also when p = 1, so the generator's sequence depends only on the ack count.
        let cwnd_packets = (self.cubic.window() / self.mss).max(1) as f64;
        let p = (self.window.capacity() as f64 / (2.0 * cwnd_packets)).min(1.0);
        if self.rng.next_unit() >= p {
            return;
        }
        let y = observation.rtt as f64 / 1e6; // milliseconds
        let slot = self.window.push(observation.in_flight as f64, y);
        self.samples_taken += 1;
        self.last_slot = Some(slot);
        if !self.window.is_full() {
            return;
        }
        let r = self.window.correlation();
        self.last_r = Some(r);
        if r < self.threshold {
            // The underlying controller runs unchanged from the window it has.
            self.clamp_active = false;
            return;
        }
        let Some((m, b)) = self.window.line() else { return };
        // Where the fitted line meets the minimum RTT: y = min_rtt ⇒ x = (min_rtt − b)/m.
        // R ≥ threshold > 0 implies m > 0; a threshold of 0 could admit m ≤ 0, which
        // has no such point — then keep the previous state.
        let min_rtt = observation.min_rtt as f64 / 1e6;
        let estimate = (min_rtt - b) / m;
        if m.is_nan() || m <= 0.0 || !estimate.is_finite() {
            return;
        }
        let floor = (minimum_window(self.mss) / self.mss) as f64;
        let estimate = estimate.clamp(floor, MAX_ESTIMATE_PACKETS);
        self.last_estimate = Some(estimate);
        // Chosen: "the write index" is the slot just written; its half of the window
        // picks the dither, so the window alternates between about half a window of
        // samples near the estimate and half a window probing above it.
        let dither = if slot < self.window.capacity() / 2 {
            self.dither.small
        } else {
            self.dither.large_min.max(estimate / self.dither.large_divisor)
        };
        let packets = (estimate + dither).round() as u64;
        self.cubic.clamp_window(packets * self.mss);
        self.clamp_active = true;
    }
}

impl Controller for DelayCorrelation {
    fn on_sent(&mut self, sent: &Sent) {
        let in_flight = sent.bytes_in_flight.div_ceil(self.mss).max(1);
        self.in_flight_at_send.insert(sent.time, in_flight);
        if self.in_flight_at_send.len() > MAX_TRACKED_SENDS {
            self.in_flight_at_send.pop_first();
        }
        self.cubic.on_sent(sent);
    }

    fn on_ack(&mut self, acked: &Acked) {
        // RTT samples of retransmitted packets are ambiguous in TCP; QUIC never
        // retransmits a packet (lost data goes in new packets), so every ack's sample
        // is unambiguous and none needs ignoring here.
        if let Some(&in_flight) = self.in_flight_at_send.get(&acked.sent_time) {
            if self
                .frame_newest
                .is_none_or(|newest| acked.sent_time >= newest.sent_time)
            {
                self.frame_newest = Some(Observation {
                    sent_time: acked.sent_time,
                    in_flight,
                    rtt: acked.rtt.latest,
                    min_rtt: acked.rtt.min,
                });
            }
        }
        // Anything sent before an acked packet and still unacked is lost or reordered;
        // forgetting it costs at most an observation. Same-time entries stay (a batch).
        self.in_flight_at_send = self.in_flight_at_send.split_off(&acked.sent_time);
        if self.clamp_active {
            // Suppress CUBIC's increase while clamped: to CUBIC the window is not the
            // limit, so it neither grows nor counts the time in its cubic epoch.
            self.cubic.on_ack(&Acked {
                app_limited: true,
                ..*acked
            });
        } else {
            self.cubic.on_ack(acked);
        }
    }

    fn on_ack_end(&mut self, now: Nanos, bytes_in_flight: u64) {
        self.cubic.on_ack_end(now, bytes_in_flight);
        if let Some(observation) = self.frame_newest.take() {
            self.observe(observation);
        }
    }

    fn on_loss(&mut self, lost: &Lost) {
        self.in_flight_at_send = self.in_flight_at_send.split_off(&(lost.sent_time + 1));
        self.cubic.on_loss(lost);
    }

    fn on_mtu(&mut self, mtu: NonZeroU64) {
        self.mss = mtu.get();
        self.cubic.on_mtu(mtu);
    }

    fn window(&self) -> u64 {
        self.cubic.window()
    }

    fn ssthresh(&self) -> Option<u64> {
        self.cubic.ssthresh()
    }

    fn name(&self) -> &'static str {
        "delay-correlation"
    }

    /// `clamp_active` (0/1), `r` and `estimate_packets` (last values, absent until the
    /// window first fills), `samples_taken`, `last_slot`.
    fn diagnostic_names(&self) -> &'static [&'static str] {
        &["clamp_active", "samples_taken", "r", "estimate_packets", "last_slot"]
    }

    fn diagnostics(&self) -> Vec<(&'static str, f64)> {
        let mut out = vec![
            ("clamp_active", if self.clamp_active { 1.0 } else { 0.0 }),
            ("samples_taken", self.samples_taken as f64),
        ];
        if let Some(r) = self.last_r {
            out.push(("r", r));
        }
        if let Some(estimate) = self.last_estimate {
            out.push(("estimate_packets", estimate));
        }
        if let Some(slot) = self.last_slot {
            out.push(("last_slot", slot as f64));
        }
        out
    }

    fn box_clone(&self) -> Box<dyn Controller> {
        Box::new(self.clone())
    }
}
