//! `congestion`: congestion controllers as pure, deterministic state machines.
//!
//! A controller sees only the events below — a packet sent, a packet acknowledged (with
//! RTT estimates), the end of one ACK's worth of acknowledgements, a loss event, an MTU
//! change — and answers with a congestion window in bytes (and optionally a pacing rate).
//! **Time is an argument** ([`Nanos`] from an arbitrary origin); nothing here reads a
//! clock, draws unseeded randomness or knows about any transport library. The QUIC agent
//! adapts quinn's controller interface to [`Controller`]; a simulator can drive the same
//! state machines directly.
//!
//! | name | module | `cc_params` keys (default) |
//! |---|---|---|
//! | `newreno` | [`newreno`] | none |
//! | `cubic` | [`cubic`] | `variant` = `rfc9438` \| `chromium` (`rfc9438`; `chromium` also leaves slow start by Chromium's hybrid slow start) |
//! | `vegas` | [`vegas`] | `alpha` (2), `beta` (4), `gamma` (1) packets, 0..=1000, alpha ≤ beta |
//! | `ledbat` | [`ledbat`] | `flavour` = `libutp` \| `libtorrent` (`libutp`); `target` ms (100), 0.001..=10000; `delay_signal` = `one-way` \| `rtt` (`one-way`) |
//! | `delay-correlation` | [`delay_correlation`] | `variant` (as cubic); `window` (32) 4..=4096; `threshold` (0.9) 0..=1; `seed` (u64, [`delay_correlation::DEFAULT_SEED`]); `dither_small` (2), `dither_large_min` (10) packets 0..=10000; `dither_large_divisor` (16) 1..=1e6 |
//!
//! Windows never go below [`minimum_window`] (2·MSS). No controller sets a pacing rate.

use std::collections::BTreeMap;
use std::fmt;
use std::num::NonZeroU64;

mod base_delay;
mod correlation;
pub mod cubic;
pub mod delay_correlation;
mod hybrid_slow_start;
pub mod ledbat;
pub mod newreno;
mod params;
mod prng;
mod recovery;
pub mod vegas;
mod window;

pub use params::{Kind, Parameter};
pub use window::{initial_window, minimum_window};

use params::ParamReader;

/// Nanoseconds since an arbitrary origin chosen by the driver (an instant), or a
/// duration in nanoseconds (RTTs).
pub type Nanos = u64;

/// RTT estimates at the moment of an acknowledgement (RFC 9002 §5 names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rtt {
    /// The sample this acknowledgement produced (ack time − send time of the acked packet).
    pub latest: Nanos,
    /// Minimum RTT seen on the path.
    pub min: Nanos,
    /// Smoothed RTT.
    pub smoothed: Nanos,
}

/// One transmission (a packet, or a batch sent in one go) leaving the sender.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sent {
    pub time: Nanos,
    pub bytes: u64,
    /// Packet number of the (last) packet sent.
    pub packet_number: u64,
    /// Bytes in flight including this transmission.
    pub bytes_in_flight: u64,
}

/// One packet newly acknowledged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Acked {
    pub now: Nanos,
    /// When the acknowledged packet was sent.
    pub sent_time: Nanos,
    pub bytes: u64,
    pub rtt: Rtt,
    /// The sender had less data to send than the window allowed when this was sent.
    pub app_limited: bool,
}

/// A one-way delay sample of the data direction: the receiver's clock when a timestamp
/// arrived minus the sender's clock when it was stamped (uTP's `timestamp_difference`).
/// The two clocks need not agree, so `delay` may even be negative: only differences
/// between samples mean anything (a constant offset between the clocks cancels).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OneWayDelay {
    /// When the sample reached the sender (the sender's clock, the controller's origin).
    pub now: Nanos,
    pub delay: i64,
}

/// A congestion event: one or more packets declared lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lost {
    pub now: Nanos,
    /// Send time of the largest lost packet (recovery periods compare against it).
    pub sent_time: Nanos,
    pub bytes: u64,
    /// RFC 9002 §7.6 persistent congestion.
    pub persistent: bool,
}

/// A congestion controller. Call order per ACK frame: `on_ack` for each newly acked
/// packet, then `on_ack_end` once.
pub trait Controller: Send {
    fn on_sent(&mut self, sent: &Sent);
    fn on_ack(&mut self, acked: &Acked);
    /// The acknowledgements of one ACK frame have all been given; `bytes_in_flight` is
    /// what remains in flight.
    fn on_ack_end(&mut self, _now: Nanos, _bytes_in_flight: u64) {}
    fn on_loss(&mut self, lost: &Lost);
    /// The maximum datagram size changed (never to 0, which would zero every window).
    fn on_mtu(&mut self, mtu: NonZeroU64);
    /// A one-way delay sample of the data direction arrived. Only a transport that
    /// exchanges timestamps gives them, and only to a controller that
    /// [wants them](Controller::wants_one_way_delay).
    fn on_one_way_delay(&mut self, _sample: &OneWayDelay) {}
    /// Whether this controller steers by one-way delay samples, so the transport must
    /// measure them; such a controller never substitutes the RTT for them.
    fn wants_one_way_delay(&self) -> bool {
        false
    }
    /// Congestion window in bytes.
    fn window(&self) -> u64;
    /// Slow-start threshold in bytes, `None` while unset (infinite).
    fn ssthresh(&self) -> Option<u64> {
        None
    }
    /// Pacing rate in bytes per second, if the algorithm sets one.
    fn pacing_rate(&self) -> Option<u64> {
        None
    }
    /// The name [`build`] knows it by.
    fn name(&self) -> &'static str;
    /// Internal state worth logging, as (name, value) pairs; empty unless the algorithm
    /// has something beyond window and ssthresh to show (e.g. delay-correlation's clamp).
    fn diagnostics(&self) -> Vec<(&'static str, f64)> {
        Vec::new()
    }
    /// Every name [`Controller::diagnostics`] may ever report, so a series can declare its
    /// columns before the first value (a name may be missing from a given sample).
    fn diagnostic_names(&self) -> &'static [&'static str] {
        &[]
    }
    /// A fresh copy with the same state (quinn clones controllers per path).
    fn box_clone(&self) -> Box<dyn Controller>;
}

/// Parameters by name, as written in a scenario's `cc_params` (values as strings; each
/// algorithm parses and range-checks its own keys and refuses unknown ones).
pub type Params = BTreeMap<String, String>;

/// Why [`build`] refused a name or a parameter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    pub field: String,
    pub value: String,
    pub problem: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {} (got {:?})", self.field, self.problem, self.value)
    }
}

impl std::error::Error for ConfigError {}

/// Names [`build`] accepts.
pub const NAMES: &[&str] = &["newreno", "cubic", "vegas", "ledbat", "delay-correlation"];

/// Builds the controller `name` with `params` for a path whose maximum datagram size is
/// `mtu` bytes, starting at time `now`.
///
/// Unknown names give a [`ConfigError`] on field `cc`; unknown keys or unparsable or
/// out-of-range values give one on field `cc_params.<key>`; an `mtu` of zero is refused
/// on field `mtu` (every window is a multiple of it).
pub fn build(name: &str, params: &Params, mtu: u64, now: Nanos) -> Result<Box<dyn Controller>, ConfigError> {
    if !NAMES.contains(&name) {
        return Err(ConfigError {
            field: "cc".into(),
            value: name.into(),
            problem: format!("unknown congestion controller; known: {}", NAMES.join(", ")),
        });
    }
    if mtu == 0 {
        return Err(ConfigError {
            field: "mtu".into(),
            value: "0".into(),
            problem: "must be positive".into(),
        });
    }
    let mut reader = ParamReader::new(params);
    let controller = read(name, &mut reader, mtu, now)?;
    reader.finish(name)?;
    Ok(controller)
}

/// The `cc_params` keys controller `name` takes, in the order it reads them, with their
/// kinds, defaults and allowed values; `None` for a name [`build`] does not know. This is
/// what the controller's own parameter reading asks for, so it cannot drift from it.
pub fn parameters(name: &str) -> Option<Vec<Parameter>> {
    if !NAMES.contains(&name) {
        return None;
    }
    let defaults = Params::new();
    let mut reader = ParamReader::new(&defaults);
    // 1200: QUIC's minimum datagram size; the values do not depend on it.
    read(name, &mut reader, 1200, 0).unwrap_or_else(|e| panic!("{name}'s defaults are refused: {e}"));
    Some(reader.into_parameters())
}

/// The one dispatch from a name to its controller, shared by [`build`] and [`parameters`].
fn read(name: &str, reader: &mut ParamReader<'_>, mtu: u64, now: Nanos) -> Result<Box<dyn Controller>, ConfigError> {
    Ok(match name {
        "newreno" => Box::new(newreno::NewReno::from_reader(reader, mtu)?),
        "cubic" => Box::new(cubic::Cubic::from_reader(reader, mtu)?),
        "vegas" => Box::new(vegas::Vegas::from_reader(reader, mtu, now)?),
        "ledbat" => Box::new(ledbat::Ledbat::from_reader(reader, mtu, now)?),
        "delay-correlation" => Box::new(delay_correlation::DelayCorrelation::from_reader(reader, mtu)?),
        _ => unreachable!("names are checked against NAMES first"),
    })
}
