//! Congestion control for quinn: the controllers of the `congestion` crate behind quinn's
//! `Controller` interface, quinn's own BBR (and CUBIC/NewReno, for cross-checking) beside
//! them, and a [`Probe`] through which the controller publishes what quinn's statistics do
//! not show (bytes in flight, acknowledged bytes, controller diagnostics) to the series,
//! and through which the one-way delay exchange ([`agent_proto::one_way`]) hands its samples
//! to a controller that wants them.

use std::any::Any;
use std::num::NonZeroU64;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use quinn_proto::congestion::{
    BbrConfig, Controller as QuinnController, ControllerFactory, ControllerMetrics, CubicConfig, NewRenoConfig,
};
use quinn_proto::RttEstimator;

use agent_proto::one_way::OneWay;

/// Controllers implemented by quinn itself; `bbr` is the comparator the lab has no own
/// implementation of, the others exist to cross-check the `congestion` crate.
pub const QUINN_NAMES: &[&str] = &["bbr", "quinn-cubic", "quinn-newreno"];

/// Every name `--cc` accepts.
pub fn all_names() -> Vec<&'static str> {
    congestion::NAMES.iter().chain(QUINN_NAMES).copied().collect()
}

/// A validated `--cc` choice with its `--cc-param`s.
#[derive(Clone, Debug)]
pub struct CcChoice {
    pub name: String,
    pub params: congestion::Params,
    /// The controller steers by one-way delay (LEDBAT's `delay_signal = "one-way"`): the
    /// end sending the payload must stamp it ([`agent_proto::one_way`]).
    pub one_way: bool,
    /// Every diagnostic the controller may report (`congestion::Controller::diagnostic_names`;
    /// none for quinn's own), so a series can declare its `cc_<name>` columns up front.
    pub diagnostic_names: &'static [&'static str],
}

impl CcChoice {
    /// Checks the name and parameters once, up front, so that building a controller per
    /// connection later cannot fail. The error is one line naming the flag and value.
    pub fn parse(name: &str, params: &[(String, String)]) -> Result<CcChoice, String> {
        let mut map = congestion::Params::new();
        let mut one_way = false;
        let mut diagnostic_names: &'static [&'static str] = &[];
        for (k, v) in params {
            if map.insert(k.clone(), v.clone()).is_some() {
                return Err(format!("--cc-param {k}={v}: parameter given twice"));
            }
        }
        if QUINN_NAMES.contains(&name) {
            if let Some((k, v)) = map.iter().next() {
                return Err(format!(
                    "--cc-param {k}={v}: --cc {name} (quinn's own controller) takes no parameters"
                ));
            }
        } else if congestion::NAMES.contains(&name) {
            // mtu and time do not matter for validation; 1200 is QUIC's minimum.
            match congestion::build(name, &map, 1200, 0) {
                Ok(c) => (one_way, diagnostic_names) = (c.wants_one_way_delay(), c.diagnostic_names()),
                Err(e) => {
                    return Err(if e.field == "cc" {
                        format!("--cc {}: {}", e.value, e.problem)
                    } else {
                        // The crate names parameters by their scenario path, `cc_params.KEY`.
                        let key = e.field.strip_prefix("cc_params.").unwrap_or(&e.field);
                        format!("--cc-param {key}={}: {}", e.value, e.problem)
                    });
                }
            }
        } else {
            return Err(format!(
                "--cc {name}: unknown congestion controller (known: {})",
                all_names().join(", ")
            ));
        }
        Ok(CcChoice {
            name: name.to_string(),
            params: map,
            one_way,
            diagnostic_names,
        })
    }
}

/// State the controller publishes for the sampler (atomics: written on the connection's
/// event path, read by the sampling task).
#[derive(Default)]
pub struct Probe {
    pub window: AtomicU64,
    pub bytes_in_flight: AtomicU64,
    /// Cumulative bytes of acknowledged packets (QUIC packet = UDP payload bytes).
    pub bytes_acked: AtomicU64,
    /// ssthresh in bytes, u64::MAX while unset.
    pub ssthresh: AtomicU64,
    /// Pacing rate the controller asks for, bytes/s, 0 if none.
    pub pacing_rate: AtomicU64,
    /// Controller-specific values (name, value), refreshed at the end of each ACK frame.
    pub diagnostics: Mutex<Vec<(&'static str, f64)>>,
    /// The connection's controller steers by one-way delay ([`CcChoice::one_way`]).
    pub wants_one_way: bool,
    /// This end's one-way delay exchange (driven by the application: the agent's
    /// connection task, the simulator's stack).
    pub one_way: Mutex<OneWay>,
    /// One-way samples (arrival, delay) not yet given to the controller; it takes them
    /// before its next acknowledgement.
    one_way_inbox: Mutex<Vec<(Instant, i64)>>,
    one_way_pending: AtomicBool,
}

impl Probe {
    /// The probe of a connection whose controller is `cc`.
    pub fn new(cc: &CcChoice) -> Probe {
        Probe {
            wants_one_way: cc.one_way,
            ..Probe::default()
        }
    }

    pub fn ssthresh(&self) -> Option<u64> {
        match self.ssthresh.load(Ordering::Relaxed) {
            u64::MAX => None,
            v => Some(v),
        }
    }
    /// Hands a one-way delay sample that arrived at `at` to the controller (which takes
    /// it before its next acknowledgement; a controller that does not want one-way samples
    /// never sees them).
    pub fn deliver_one_way(&self, at: Instant, delay: i64) {
        self.one_way_inbox.lock().unwrap().push((at, delay));
        self.one_way_pending.store(true, Ordering::Release);
    }

    fn take_one_way(&self) -> Vec<(Instant, i64)> {
        if !self.one_way_pending.swap(false, Ordering::Acquire) {
            return Vec::new();
        }
        std::mem::take(&mut *self.one_way_inbox.lock().unwrap())
    }

    /// What the probe adds to quinn's statistics in a summary's `quic` counters.
    pub fn counters(&self) -> agent_proto::summary::ProbeCounters {
        agent_proto::summary::ProbeCounters {
            ssthresh_bytes: self.ssthresh(),
            bytes_in_flight: self.bytes_in_flight.load(Ordering::Relaxed),
            bytes_acked: self.bytes_acked.load(Ordering::Relaxed),
            one_way_delay: self.one_way.lock().unwrap().summary(),
        }
    }

    pub fn pacing_rate(&self) -> Option<u64> {
        match self.pacing_rate.load(Ordering::Relaxed) {
            0 => None,
            v => Some(v),
        }
    }
}

/// Builds one controller per connection (quinn calls `build` when the connection is
/// created). One factory, hence one probe, per connection.
pub struct Factory {
    choice: CcChoice,
    probe: Arc<Probe>,
}

impl Factory {
    pub fn new(choice: CcChoice, probe: Arc<Probe>) -> Factory {
        Factory { choice, probe }
    }
}

impl ControllerFactory for Factory {
    fn build(self: Arc<Self>, now: Instant, current_mtu: u16) -> Box<dyn QuinnController> {
        let algorithm = match self.choice.name.as_str() {
            "bbr" => Algorithm::Quinn(Arc::new(BbrConfig::default()).build(now, current_mtu)),
            "quinn-cubic" => Algorithm::Quinn(Arc::new(CubicConfig::default()).build(now, current_mtu)),
            "quinn-newreno" => Algorithm::Quinn(Arc::new(NewRenoConfig::default()).build(now, current_mtu)),
            name => {
                // CcChoice::parse built this very name and parameter set already.
                let c = congestion::build(name, &self.choice.params, current_mtu as u64, 0)
                    .unwrap_or_else(|e| panic!("controller validated at start-up failed: {e}"));
                Algorithm::Lab(Mutex::new(c))
            }
        };
        let mut c = Instrumented {
            initial_window: 0,
            algorithm,
            epoch: now,
            in_flight: 0,
            window: 0,
            probe: self.probe.clone(),
        };
        c.refresh();
        c.initial_window = c.window;
        Box::new(c)
    }
}

enum Algorithm {
    /// A `congestion` crate controller. quinn requires `Sync`, the crate only `Send`: the
    /// mutex provides it; the event methods take `&mut self` and use `get_mut` (no lock).
    Lab(Mutex<Box<dyn congestion::Controller>>),
    Quinn(Box<dyn QuinnController>),
}

/// quinn's controller interface over either kind of algorithm, mapping each quinn event to
/// one `congestion` event and publishing window, in-flight and acked bytes to the probe.
struct Instrumented {
    algorithm: Algorithm,
    /// Origin of the `Nanos` handed to a `congestion` controller (the connection's start).
    epoch: Instant,
    /// Bytes in flight as this controller sees it: + sent, − acked, − lost, and reset to
    /// quinn's own figure at every `on_end_acks` (which also covers packets quinn stops
    /// tracking without an event, e.g. when keys are discarded).
    in_flight: u64,
    /// The window, cached after every event (`window()` is called per packet sent).
    window: u64,
    initial_window: u64,
    probe: Arc<Probe>,
}

impl Instrumented {
    /// Reads the algorithm's outputs after an event and publishes them.
    fn refresh(&mut self) {
        let (window, ssthresh, pacing) = match &mut self.algorithm {
            Algorithm::Lab(c) => {
                let c = c.get_mut().unwrap();
                (c.window(), c.ssthresh(), c.pacing_rate())
            }
            Algorithm::Quinn(c) => {
                let m = c.metrics();
                (c.window(), m.ssthresh, m.pacing_rate.map(|bits| bits / 8))
            }
        };
        self.window = window;
        let p = &self.probe;
        p.window.store(window, Ordering::Relaxed);
        p.bytes_in_flight.store(self.in_flight, Ordering::Relaxed);
        p.ssthresh.store(ssthresh.unwrap_or(u64::MAX), Ordering::Relaxed);
        p.pacing_rate.store(pacing.unwrap_or(0), Ordering::Relaxed);
    }
}

impl QuinnController for Instrumented {
    fn on_sent(&mut self, now: Instant, bytes: u64, last_packet_number: u64) {
        let epoch = self.epoch;
        self.in_flight += bytes;
        match &mut self.algorithm {
            Algorithm::Lab(c) => {
                let sent = congestion::Sent {
                    time: nanos(epoch, now),
                    bytes,
                    packet_number: last_packet_number,
                    bytes_in_flight: self.in_flight,
                };
                c.get_mut().unwrap().on_sent(&sent);
            }
            Algorithm::Quinn(c) => c.on_sent(now, bytes, last_packet_number),
        }
        self.refresh();
    }

    fn on_ack(&mut self, now: Instant, sent: Instant, bytes: u64, app_limited: bool, rtt: &RttEstimator) {
        let epoch = self.epoch;
        self.in_flight = self.in_flight.saturating_sub(bytes);
        self.probe.bytes_acked.fetch_add(bytes, Ordering::Relaxed);
        match &mut self.algorithm {
            Algorithm::Lab(c) => {
                let c = c.get_mut().unwrap();
                take_one_way(&self.probe, c.as_mut(), epoch);
                let acked = congestion::Acked {
                    now: nanos(epoch, now),
                    sent_time: nanos(epoch, sent),
                    bytes,
                    rtt: congestion::Rtt {
                        latest: now.saturating_duration_since(sent).as_nanos() as u64,
                        min: rtt.min().as_nanos() as u64,
                        smoothed: rtt.get().as_nanos() as u64,
                    },
                    app_limited,
                };
                c.on_ack(&acked);
            }
            Algorithm::Quinn(c) => c.on_ack(now, sent, bytes, app_limited, rtt),
        }
        // Published at on_end_acks: once per ACK frame is enough for the sampler.
    }

    fn on_end_acks(&mut self, now: Instant, in_flight: u64, app_limited: bool, largest_packet_num_acked: Option<u64>) {
        let epoch = self.epoch;
        self.in_flight = in_flight;
        match &mut self.algorithm {
            Algorithm::Lab(c) => {
                let t = nanos(epoch, now);
                let c = c.get_mut().unwrap();
                c.on_ack_end(t, in_flight);
                publish_diagnostics(&self.probe, c.as_ref());
            }
            Algorithm::Quinn(c) => c.on_end_acks(now, in_flight, app_limited, largest_packet_num_acked),
        }
        self.refresh();
    }

    fn on_congestion_event(&mut self, now: Instant, sent: Instant, is_persistent_congestion: bool, lost_bytes: u64) {
        let epoch = self.epoch;
        self.in_flight = self.in_flight.saturating_sub(lost_bytes);
        match &mut self.algorithm {
            Algorithm::Lab(c) => {
                let lost = congestion::Lost {
                    now: nanos(epoch, now),
                    sent_time: nanos(epoch, sent),
                    bytes: lost_bytes,
                    persistent: is_persistent_congestion,
                };
                c.get_mut().unwrap().on_loss(&lost);
            }
            Algorithm::Quinn(c) => c.on_congestion_event(now, sent, is_persistent_congestion, lost_bytes),
        }
        self.refresh();
    }

    fn on_mtu_update(&mut self, new_mtu: u16) {
        match &mut self.algorithm {
            Algorithm::Lab(c) => {
                // quinn never reports 0; the lab's controllers take only a real size.
                if let Some(mtu) = NonZeroU64::new(u64::from(new_mtu)) {
                    c.get_mut().unwrap().on_mtu(mtu);
                }
            }
            Algorithm::Quinn(c) => c.on_mtu_update(new_mtu),
        }
        self.refresh();
    }

    fn window(&self) -> u64 {
        self.window
    }

    fn metrics(&self) -> ControllerMetrics {
        let mut m = ControllerMetrics::default();
        m.congestion_window = self.window;
        m.ssthresh = self.probe.ssthresh();
        m.pacing_rate = self.probe.pacing_rate().map(|bytes| bytes * 8);
        m
    }

    fn clone_box(&self) -> Box<dyn QuinnController> {
        let algorithm = match &self.algorithm {
            Algorithm::Lab(c) => Algorithm::Lab(Mutex::new(c.lock().unwrap().box_clone())),
            Algorithm::Quinn(c) => Algorithm::Quinn(c.clone_box()),
        };
        Box::new(Instrumented {
            algorithm,
            epoch: self.epoch,
            in_flight: self.in_flight,
            window: self.window,
            initial_window: self.initial_window,
            probe: self.probe.clone(),
        })
    }

    fn initial_window(&self) -> u64 {
        self.initial_window
    }

    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
}

/// `t` as nanoseconds since `epoch`.
fn nanos(epoch: Instant, t: Instant) -> congestion::Nanos {
    t.saturating_duration_since(epoch).as_nanos() as u64
}

/// Gives `c` the one-way samples waiting in `probe` (if it wants them), on its clock
/// (nanoseconds since `epoch`).
fn take_one_way(probe: &Probe, c: &mut dyn congestion::Controller, epoch: Instant) {
    if !c.wants_one_way_delay() {
        return;
    }
    for (at, delay) in probe.take_one_way() {
        c.on_one_way_delay(&congestion::OneWayDelay {
            now: nanos(epoch, at),
            delay,
        });
    }
}

/// Copies the controller's diagnostics into the probe (the series' `cc_<name>` columns).
fn publish_diagnostics(probe: &Probe, c: &dyn congestion::Controller) {
    let d = c.diagnostics();
    let mut slot = probe.diagnostics.lock().unwrap();
    if !(d.is_empty() && slot.is_empty()) {
        *slot = d;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_name_names_the_flag() {
        let e = CcChoice::parse("nope", &[]).unwrap_err();
        assert!(e.starts_with("--cc nope: unknown congestion controller"), "{e}");
        assert!(e.contains("bbr"), "{e}");
    }

    #[test]
    fn quinn_controllers_refuse_parameters() {
        assert!(CcChoice::parse("bbr", &[]).is_ok());
        let e = CcChoice::parse("bbr", &[("x".into(), "1".into())]).unwrap_err();
        assert!(e.starts_with("--cc-param x=1:"), "{e}");
    }

    #[test]
    fn quinn_bbr_is_instrumented() {
        let probe = Arc::new(Probe::default());
        let f = Arc::new(Factory::new(CcChoice::parse("bbr", &[]).unwrap(), probe.clone()));
        let now = Instant::now();
        let mut c = f.build(now, 1200);
        assert!(c.window() > 0);
        c.on_sent(now, 1200, 0);
        c.on_sent(now, 1200, 1);
        assert_eq!(probe.bytes_in_flight.load(Ordering::Relaxed), 2400);
        c.on_end_acks(now, 1200, false, Some(0));
        assert_eq!(probe.bytes_in_flight.load(Ordering::Relaxed), 1200);
        assert_eq!(probe.window.load(Ordering::Relaxed), c.window());
    }
}

#[cfg(test)]
mod one_way_tests {
    use super::*;
    use std::time::Duration;

    fn ack(now: congestion::Nanos, rtt: congestion::Nanos) -> congestion::Acked {
        congestion::Acked {
            now,
            sent_time: now - rtt,
            bytes: 1200,
            rtt: congestion::Rtt {
                latest: rtt,
                min: rtt,
                smoothed: rtt,
            },
            app_limited: false,
        }
    }

    /// LEDBAT takes the probe's one-way samples (each once, at its arrival time on the
    /// controller's clock) and holds its window, never using the RTT, until the first.
    #[test]
    fn ledbat_takes_one_way_samples_from_the_probe() {
        let choice = CcChoice::parse("ledbat", &[]).unwrap();
        assert!(choice.one_way, "one-way is the default signal");
        let rtt_choice = CcChoice::parse("ledbat", &[("delay_signal".into(), "rtt".into())]).unwrap();
        assert!(!rtt_choice.one_way);
        assert!(!CcChoice::parse("cubic", &[]).unwrap().one_way);
        let probe = Probe::default();
        let epoch = Instant::now();
        let ms = |n: u64| epoch + Duration::from_millis(n);
        let mut c = congestion::build("ledbat", &choice.params, 1200, 0).unwrap();
        let w0 = c.window();
        take_one_way(&probe, c.as_mut(), epoch);
        c.on_ack(&ack(60_000_000, 50_000_000));
        assert_eq!(c.window(), w0, "no sample yet: the window holds");
        // A sample (any clock offset) with queueing 0 → the next ack grows the window;
        // then one 300 ms above it → the window shrinks, whatever the RTT (50 ms) says.
        probe.deliver_one_way(ms(70), -123_456_789);
        take_one_way(&probe, c.as_mut(), epoch);
        c.on_ack(&ack(80_000_000, 50_000_000));
        let w1 = c.window();
        assert!(w1 > w0);
        probe.deliver_one_way(ms(90), -123_456_789 + 300_000_000);
        take_one_way(&probe, c.as_mut(), epoch);
        take_one_way(&probe, c.as_mut(), epoch);
        // (libutp: the ack that ends slow start leaves the window; the next one shrinks it.)
        c.on_ack(&ack(100_000_000, 50_000_000));
        c.on_ack(&ack(101_000_000, 50_000_000));
        assert!(c.window() < w1);
        let d = c.diagnostics();
        assert!(d.contains(&("one_way_samples", 2.0)), "each sample once: {d:?}");
        assert!(d.contains(&("queueing_delay_ms", 300.0)), "{d:?}");
        assert!(d.contains(&("acks_without_delay", 1.0)), "{d:?}");
    }
}
