//! NewReno as RFC 9002 §7 specifies it for QUIC.

use crate::params::ParamReader;
use crate::recovery::RecoveryPeriod;
use crate::window::{initial_window, minimum_window};
use crate::{Acked, ConfigError, Controller, Lost, Params, Sent};
use std::num::NonZeroU64;

/// RFC 9002 §7.3 NewReno: slow start adds the acked bytes; congestion avoidance adds one
/// MSS per window of acked bytes; a congestion event halves the window once per recovery
/// period; persistent congestion collapses it to the minimum window.
#[derive(Debug, Clone)]
pub struct NewReno {
    mss: u64,
    window: u64,
    ssthresh: Option<u64>,
    /// Bytes acked in congestion avoidance not yet turned into growth. RFC 9002's
    /// `cwnd += MSS·acked/cwnd` in integers would round every ack down; counting bytes
    /// and adding one MSS per full window acked (appropriate byte counting, RFC 3465) is
    /// the exact "+1 MSS per RTT".
    avoidance_credit: u64,
    recovery: RecoveryPeriod,
    /// Nothing acked or lost yet: an MTU change recomputes the initial window (RFC 9002
    /// §7.2 "the initial congestion window SHOULD be recalculated with the new size").
    untouched: bool,
}

impl NewReno {
    pub fn new(mss: u64) -> Self {
        NewReno {
            mss,
            window: initial_window(mss),
            ssthresh: None,
            avoidance_credit: 0,
            recovery: RecoveryPeriod::default(),
            untouched: true,
        }
    }

    /// NewReno takes no parameters; any key is refused.
    pub fn from_params(params: &Params, mss: u64) -> Result<Self, ConfigError> {
        ParamReader::read_all(params, "newreno", |r| Self::from_reader(r, mss))
    }

    /// Reads nothing: the reader stays empty, and `finish` refuses every key.
    pub(crate) fn from_reader(_reader: &mut ParamReader<'_>, mss: u64) -> Result<Self, ConfigError> {
        Ok(Self::new(mss))
    }

    fn in_slow_start(&self) -> bool {
        self.ssthresh.is_none_or(|ssthresh| self.window < ssthresh)
    }
}

impl Controller for NewReno {
    fn on_sent(&mut self, _sent: &Sent) {}

    fn on_ack(&mut self, acked: &Acked) {
        self.untouched = false;
        // RFC 9002 §7.3.2: no growth from packets sent before recovery began; §7.8: no
        // growth while the window is not the limit.
        if self.recovery.covers(acked.sent_time) || acked.app_limited {
            return;
        }
        if self.in_slow_start() {
            self.window += acked.bytes;
            return;
        }
        self.avoidance_credit += acked.bytes;
        while self.avoidance_credit >= self.window {
            self.avoidance_credit -= self.window;
            self.window += self.mss;
        }
    }

    fn on_loss(&mut self, lost: &Lost) {
        self.untouched = false;
        if self.recovery.on_loss(lost) {
            // kLossReductionFactor = 0.5; the window, not ssthresh, is floored.
            let ssthresh = self.window / 2;
            self.ssthresh = Some(ssthresh);
            self.window = ssthresh.max(minimum_window(self.mss));
            self.avoidance_credit = 0;
        }
        if lost.persistent {
            self.window = minimum_window(self.mss);
            self.avoidance_credit = 0;
            self.recovery.forget();
        }
    }

    fn on_mtu(&mut self, mtu: NonZeroU64) {
        self.mss = mtu.get();
        if self.untouched {
            self.window = initial_window(self.mss);
        }
        self.window = self.window.max(minimum_window(self.mss));
    }

    fn window(&self) -> u64 {
        self.window
    }

    fn ssthresh(&self) -> Option<u64> {
        self.ssthresh
    }

    fn name(&self) -> &'static str {
        "newreno"
    }

    fn box_clone(&self) -> Box<dyn Controller> {
        Box::new(self.clone())
    }
}
