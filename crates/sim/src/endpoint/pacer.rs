//! When a constant-rate sender sends (the agent's `udp-send` and `probe`): `burst` sends
//! back to back at each deadline `start + k·interval` before `end`, at most `count` in all.

use std::net::SocketAddrV4;

use linkem::Nanos;
use wire::ipv4::Ecn;

use super::packets;
use crate::datagram::Datagram;

/// What a sender sends: `burst` datagrams of `size` bytes every `interval`, until `count`
/// datagrams (if given) or the end.
pub struct Schedule {
    pub size: u32,
    pub interval: Nanos,
    pub burst: u32,
    pub count: Option<u64>,
}

pub struct Pacer {
    next: Nanos,
    interval: Nanos,
    burst: u64,
    count: Option<u64>,
    end: Nanos,
    sent: u64,
}

impl Pacer {
    pub fn new(s: &Schedule, start: Nanos, end: Nanos) -> Pacer {
        Pacer {
            next: start,
            interval: s.interval.max(1),
            burst: u64::from(s.burst.max(1)),
            count: s.count,
            end,
            sent: 0,
        }
    }

    /// Sends made so far (the next one's sequence number).
    pub fn sent(&self) -> u64 {
        self.sent
    }

    /// Whether `count` ended it.
    pub fn counted_out(&self) -> bool {
        self.count.is_some_and(|c| self.sent >= c)
    }

    pub fn done(&self) -> bool {
        self.next >= self.end || self.counted_out()
    }

    pub fn next_wakeup(&self) -> Option<Nanos> {
        (!self.done()).then_some(self.next)
    }

    /// Sends what is due by `now` from `src` to `dst` into `out` as packets: `size`-byte
    /// datagrams (not ECN-capable), `stamp` writing each one's sequence number and
    /// deadline into its payload.
    pub fn send_due(
        &mut self,
        now: Nanos,
        (src, dst): (SocketAddrV4, SocketAddrV4),
        size: usize,
        mut stamp: impl FnMut(u64, Nanos, &mut [u8]),
        out: &mut Vec<Vec<u8>>,
    ) {
        let datagrams = self.due(now).into_iter().map(|(seq, at)| {
            let mut payload = vec![0u8; size];
            stamp(seq, at, &mut payload);
            Datagram {
                src,
                dst,
                ecn: Ecn::NotEct,
                payload,
            }
        });
        packets(datagrams, out);
    }

    /// The sends due by `now`, in order: (sequence number, deadline).
    pub fn due(&mut self, now: Nanos) -> Vec<(u64, Nanos)> {
        let mut out = Vec::new();
        while self.next <= now && !self.done() {
            for _ in 0..self.burst {
                if self.counted_out() {
                    break;
                }
                out.push((self.sent, self.next));
                self.sent += 1;
            }
            self.next += self.interval;
        }
        out
    }

    /// Time from the first deadline to the last one used, and the sends at each.
    pub fn span(&self) -> (Nanos, u64) {
        (
            self.sent.div_ceil(self.burst).saturating_sub(1) * self.interval,
            self.burst,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bursts_at_deadlines_until_count_or_end() {
        let s = Schedule {
            size: 100,
            interval: 10,
            burst: 2,
            count: Some(5),
        };
        let mut p = Pacer::new(&s, 100, 1000);
        assert_eq!(p.due(99), vec![]);
        assert_eq!(p.due(115), vec![(0, 100), (1, 100), (2, 110), (3, 110)]);
        assert_eq!(p.next_wakeup(), Some(120));
        assert_eq!(p.due(500), vec![(4, 120)]);
        assert!(p.done() && p.counted_out() && p.next_wakeup().is_none());
        assert_eq!(p.span(), (20, 2));
        let mut q = Pacer::new(&Schedule { count: None, ..s }, 0, 25);
        assert_eq!(q.due(1000).len(), 6);
        assert!(q.done() && !q.counted_out());
    }
}
