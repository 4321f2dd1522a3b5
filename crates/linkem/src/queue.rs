//! Queue disciplines for the queue that sits ahead of the rate stage.
//!
//! A discipline only decides admission; the [`crate::rate::RateQueue`] stage owns the
//! packets and the timeline. Occupancy ([`Backlog`]) counts the packets that have arrived
//! and not yet finished serialisation, *including the one being serialised*, so a queue
//! of N packets accepts exactly N packets of a burst arriving at one instant, whatever
//! the rate. (AQMs such as CoDel would be further disciplines here.)

pub use crate::spec::QueueLimit;

/// What the queue holds at an instant: packets arrived and not yet fully serialised.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Backlog {
    pub packets: u64,
    pub bytes: u64,
}

impl Backlog {
    pub(crate) fn add(&mut self, size: u32) {
        self.packets += 1;
        self.bytes += u64::from(size);
    }

    pub(crate) fn remove(&mut self, size: u32) {
        self.packets -= 1;
        self.bytes -= u64::from(size);
    }
}

/// Drop-tail: admit a packet if, with it, the backlog stays within the limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DropTail {
    limit: QueueLimit,
}

impl DropTail {
    pub fn new(limit: QueueLimit) -> Self {
        DropTail { limit }
    }

    pub fn limit(&self) -> QueueLimit {
        self.limit
    }

    /// Whether a packet of `size` bytes may join `backlog`.
    pub fn admits(&self, backlog: &Backlog, size: u32) -> bool {
        match self.limit {
            QueueLimit::Packets(n) => backlog.packets < u64::from(n),
            QueueLimit::Bytes(n) => backlog.bytes + u64::from(size) <= n,
            QueueLimit::Unlimited => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drop_tail_limits() {
        let b = Backlog {
            packets: 2,
            bytes: 3000,
        };
        assert!(DropTail::new(QueueLimit::Packets(3)).admits(&b, 1500));
        assert!(!DropTail::new(QueueLimit::Packets(2)).admits(&b, 1500));
        assert!(DropTail::new(QueueLimit::Bytes(4500)).admits(&b, 1500));
        assert!(!DropTail::new(QueueLimit::Bytes(4499)).admits(&b, 1500));
        assert!(DropTail::new(QueueLimit::Unlimited).admits(&b, u32::MAX));
    }
}
