//! A scripted path for one sending connection: a fixed one-way delay each way, no rate
//! limit, a loss rule on data segments, and a receiver that ACKs every data segment at
//! once (cumulative ACK plus SACK blocks, most recent first, a D-SACK block first for
//! data received twice, timestamps echoed), so the
//! sender's reactions can be computed by hand.

#![allow(dead_code)]

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use tcp::{flags, Config, Connection, Nanos, SackBlocks, Segment, TcpRepr};

pub const MS: Nanos = 1_000_000;
pub const MSS: u64 = 1448;
const PEER_ISN: u32 = 9000;

/// One data segment the sender put on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tx {
    pub at: Nanos,
    /// 1-based segment number (offset / MSS + 1).
    pub n: u64,
    pub retransmission: bool,
}

pub struct Path {
    pub sender: Connection,
    pub one_way: Nanos,
    /// (segment number, transmission count so far of it) → dropped?
    pub drop: Box<dyn FnMut(u64, u32) -> bool>,
    /// (segment number, transmission count so far of it) → delay added to its one-way
    /// trip (a stall that holds some segments back, as a merge does).
    pub delay: Box<dyn FnMut(u64, u32) -> Nanos>,
    /// (segment, other): the first transmission of `segment` reaches the receiver right
    /// after `other` does (reordering), not in its place; an entry goes once used.
    pub late: Vec<(u64, u64)>,
    held: Vec<(u64, Segment)>,
    pub sent: Vec<Tx>,
    /// ACK arrival times at the sender with what the sender sent in answer.
    pub answers: Vec<(Nanos, Vec<Tx>)>,
    heap: BinaryHeap<Reverse<(Nanos, u64, usize)>>,
    in_flight: Vec<Option<(bool, Segment)>>,
    order: u64,
    received: Vec<(u64, u64)>,
    recent: Vec<(u64, u64)>,
    tx_count: std::collections::HashMap<u64, u32>,
    isn: u32,
}

/// Segment number of a data segment starting at sequence offset `start`.
pub fn number(start: u64) -> u64 {
    (start - 1) / MSS + 1
}

impl Path {
    /// A connected sender (handshake RTT = 2 · `one_way`, ends at `2·one_way`) that has
    /// `segments` full segments to send and then a FIN if `fin`.
    pub fn new(cc: &str, one_way: Nanos, segments: u64, fin: bool) -> Path {
        let cfg = Config::new(cc, 40000, 5201);
        let mut sender = Connection::connect(cfg).unwrap();
        let mut out = Vec::new();
        sender.poll(0, &mut out);
        let syn = out.pop().expect("a SYN");
        let synack = Segment {
            header: TcpRepr {
                src_port: 5201,
                dst_port: 40000,
                seq: PEER_ISN,
                ack: syn.header.seq.wrapping_add(1),
                flags: flags::SYN | flags::ACK,
                window: 65535,
                mss: Some(1460),
                window_scale: Some(7),
                sack_permitted: true,
                timestamps: Some((1, syn.header.timestamps.unwrap().0)),
                ..TcpRepr::default()
            },
            ..Segment::default()
        };
        sender.receive(2 * one_way, &synack);
        assert!(sender.is_established());
        sender.write_zeros(segments * MSS);
        if fin {
            sender.close();
        }
        Path {
            isn: syn.header.seq,
            sender,
            one_way,
            drop: Box::new(|_, _| false),
            delay: Box::new(|_, _| 0),
            late: Vec::new(),
            held: Vec::new(),
            sent: Vec::new(),
            answers: Vec::new(),
            heap: BinaryHeap::new(),
            in_flight: Vec::new(),
            order: 0,
            received: Vec::new(),
            recent: Vec::new(),
            tx_count: Default::default(),
        }
    }

    fn off(&self, seq: u32) -> u64 {
        u64::from(seq.wrapping_sub(self.isn))
    }

    fn schedule(&mut self, at: Nanos, to_receiver: bool, s: Segment) {
        self.in_flight.push(Some((to_receiver, s)));
        self.heap.push(Reverse((at, self.order, self.in_flight.len() - 1)));
        self.order += 1;
    }

    /// Polls the sender at `now` and puts what it sends on the path.
    fn poll(&mut self, now: Nanos) -> Vec<Tx> {
        let mut out = Vec::new();
        self.sender.poll(now, &mut out);
        let mut txs = Vec::new();
        for s in out {
            if s.payload.is_empty() && !s.has(flags::FIN) {
                continue;
            }
            let start = self.off(s.header.seq);
            let n = number(start);
            let count = self.tx_count.entry(n).or_default();
            let tx = Tx {
                at: now,
                n,
                retransmission: *count > 0,
            };
            let dropped = (self.drop)(n, *count);
            let extra = (self.delay)(n, *count);
            *count += 1;
            txs.push(tx);
            self.sent.push(tx);
            if !dropped {
                self.schedule(now + self.one_way + extra, true, s);
            }
        }
        txs
    }

    /// The receiver's ACK for the data segment `s`.
    fn ack_for(&mut self, s: &Segment) -> Segment {
        let start = self.off(s.header.seq);
        let end = start + s.seq_len() as u64;
        // Data received before is reported first, as a D-SACK block (RFC 2883).
        let dsack = self.received.iter().any(|&(a, b)| a <= start && end <= b);
        // Merge into the received ranges and the recency list.
        let (mut lo, mut hi) = (start, end);
        self.received.retain(|&(a, b)| {
            if b < lo || a > hi {
                true
            } else {
                lo = lo.min(a);
                hi = hi.max(b);
                false
            }
        });
        self.received.push((lo, hi));
        self.received.sort_unstable();
        let cum = match self.received.first() {
            Some(&(1, b)) => b,
            _ => 1,
        };
        self.recent.retain(|&(a, b)| b < lo || a > hi);
        self.recent.insert(0, (lo, hi));
        self.recent.retain(|&(_, b)| b > cum);
        let isn = self.isn;
        let sack: Vec<(u32, u32)> = dsack
            .then_some((start, end))
            .into_iter()
            .chain(self.recent.iter().copied())
            .take(3)
            .map(|(a, b)| (isn.wrapping_add(a as u32), isn.wrapping_add(b as u32)))
            .collect();
        Segment {
            header: TcpRepr {
                src_port: 5201,
                dst_port: 40000,
                seq: PEER_ISN + 1,
                ack: isn.wrapping_add(cum as u32),
                flags: flags::ACK,
                window: 65535,
                timestamps: Some((1, s.header.timestamps.unwrap().0)),
                sack: SackBlocks::new(&sack).unwrap(),
                ..TcpRepr::default()
            },
            ..Segment::default()
        }
    }

    /// Runs until `until` or until nothing is left to happen.
    pub fn run(&mut self, until: Nanos) {
        let start = 2 * self.one_way;
        self.poll(start);
        loop {
            let next_event = self.heap.peek().map(|Reverse((t, _, _))| *t);
            let next_timer = self.sender.next_timeout();
            let now = match (next_event, next_timer) {
                (Some(e), Some(t)) => e.min(t),
                (Some(e), None) => e,
                (None, Some(t)) => t,
                (None, None) => return,
            };
            if now > until {
                return;
            }
            if next_event == Some(now) {
                let Reverse((_, _, i)) = self.heap.pop().unwrap();
                let (to_receiver, s) = self.in_flight[i].take().unwrap();
                if to_receiver {
                    let n = number(self.off(s.header.seq));
                    // Its first arrival is its first transmission: the path keeps order.
                    if let Some(i) = self.late.iter().position(|&(late, _)| late == n) {
                        let (_, after) = self.late.remove(i);
                        self.held.push((after, s));
                        continue;
                    }
                    let ack = self.ack_for(&s);
                    self.schedule(now + self.one_way, false, ack);
                    while let Some(i) = self.held.iter().position(|&(after, _)| after == n) {
                        let (_, late) = self.held.remove(i);
                        let ack = self.ack_for(&late);
                        self.schedule(now + self.one_way, false, ack);
                    }
                } else {
                    self.sender.receive(now, &s);
                    let txs = self.poll(now);
                    self.answers.push((now, txs));
                }
            } else {
                self.poll(now);
            }
        }
    }

    pub fn retransmissions(&self) -> Vec<Tx> {
        self.sent.iter().copied().filter(|t| t.retransmission).collect()
    }
}
