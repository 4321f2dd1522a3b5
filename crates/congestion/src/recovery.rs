//! The recovery period of RFC 9002 §7.3.2: one congestion event per window of data.

use crate::{Lost, Nanos};

/// When the current recovery period began. Packets sent up to then belong to the
/// congestion event that started it: their losses are no new event and their acks grow
/// nothing. The period ends, implicitly, with the first ack of a packet sent after it
/// began — that packet's sent time is past `start`, so nothing needs clearing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct RecoveryPeriod {
    start: Option<Nanos>,
}

impl RecoveryPeriod {
    /// Was a packet sent at `sent_time` sent before the current period began?
    /// (RFC 9002 `InCongestionRecovery`: `sent_time <= congestion_recovery_start_time`.)
    pub fn covers(&self, sent_time: Nanos) -> bool {
        self.start.is_some_and(|start| sent_time <= start)
    }

    /// A loss: true when it is a new congestion event (its largest lost packet was sent
    /// after the current period began), which starts a new period now.
    pub fn on_loss(&mut self, lost: &Lost) -> bool {
        if self.covers(lost.sent_time) {
            return false;
        }
        self.start = Some(lost.now);
        true
    }

    /// Persistent congestion: RFC 9002 §7.6.2 resets the recovery start time, so acks
    /// of anything sent from now on grow the (collapsed) window again.
    pub fn forget(&mut self) {
        self.start = None;
    }
}
