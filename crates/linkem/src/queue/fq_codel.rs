//! FQ-CoDel (RFC 8290): flow queueing with a CoDel instance per queue.
//!
//! * Flows: a packet goes to queue `flow % flows`, `flow` being the hash of its 5-tuple
//!   the driver computed ([`crate::Packet::flow`]).
//! * Enqueue (§4.1): the packet joins the tail of its queue (timestamped for CoDel). A
//!   queue that was in neither list joins the tail of the *new* list with a deficit of
//!   one quantum. If the occupancy then exceeds the limit, the packet at the head of the
//!   queue holding the most bytes is dropped ([`crate::DropReason::QueueFull`]; one
//!   packet per overflow, the RFC's description, where Linux drops a batch); if that is
//!   the arriving packet itself, it is refused. A packet that could not fit even in an
//!   empty queue is refused before anything else is dropped.
//! * Dequeue (§4.2, deficit round robin): take the first queue of the new list, else of
//!   the old list. If its deficit is ≤ 0, add a quantum, move it to the tail of the old
//!   list and start over. Otherwise run CoDel on it ([`super::codel`]; drops
//!   [`crate::DropReason::AqmDrop`], or ECN marks): a packet comes out, its size is taken
//!   from the deficit and it is sent; no packet (the queue is empty), a queue from the new
//!   list moves to the tail of the old list, one from the old list leaves the lists, and
//!   the scheduler starts over. A queue that empties this way and gets a packet again
//!   rejoins as a new queue: a sparse flow (one that never builds a queue) is always
//!   served before the bulk ones.
//! * CoDel's "queue holds at most one MTU" check looks at the flow's own queue.
//!
//! Defaults (RFC 8290 §5 and Linux): 1024 flows, quantum 1514 bytes, limit 10240
//! packets, CoDel target 5 ms and interval 100 ms.

use std::collections::VecDeque;

use super::codel::{CodelParams, CodelState};
use super::{Backlog, Context, Discipline, Fifo, QueueLimit};
use crate::link::Link;
use crate::spec::queue::{require, require_positive, Class, Fields, Options};
use crate::{DropReason, Dropped, Nanos, Packet};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FqCodelParams {
    /// Number of flow queues.
    pub flows: u32,
    /// Bytes a queue may send per round.
    pub quantum: u32,
    pub codel: CodelParams,
}

impl Default for FqCodelParams {
    fn default() -> Self {
        FqCodelParams {
            flows: 1024,
            quantum: 1514,
            codel: CodelParams::default(),
        }
    }
}

/// The default hard limit (RFC 8290 / Linux `fq_codel`'s `limit`).
pub const DEFAULT_LIMIT: QueueLimit = QueueLimit::Packets(10240);

/// The most flow queues accepted.
pub const MAX_FLOWS: u32 = 65536;

impl Options for FqCodelParams {
    const CLASS: Class = Class {
        fifo: false,
        ..Class::aqm(
            "fq_codel",
            "FQ-CoDel, flow queueing with CoDel per flow (RFC 8290)",
            Self::PARAMETERS,
            DEFAULT_LIMIT,
        )
    };
    const PARAMETERS: &'static [&'static str] = &["flows", "quantum_bytes", "target_ns", "interval_ns", "mtu_bytes"];
    fn read(f: &mut Fields) -> Result<Self, String> {
        let d = FqCodelParams::default();
        Ok(FqCodelParams {
            flows: f.get("flows", d.flows)?,
            quantum: f.get("quantum_bytes", d.quantum)?,
            codel: CodelParams::read(f)?,
        })
    }
    fn write(&self, f: &mut Fields) {
        f.put("flows", self.flows);
        f.put("quantum_bytes", self.quantum);
        self.codel.write(f);
    }
    fn check(&self) -> Result<(), String> {
        let flows_ok = (1..=MAX_FLOWS).contains(&self.flows);
        require(flows_ok, "flows", &format!("in 1..={MAX_FLOWS}"), self.flows)?;
        require_positive("quantum_bytes", self.quantum)?;
        self.codel.check()
    }
    fn build<P: Send + 'static>(&self, limit: QueueLimit, ecn: bool, _link: &Link) -> Box<dyn Discipline<P>> {
        Box::new(FqCodel::new(*self, limit, ecn))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum List {
    New,
    Old,
}

#[derive(Debug)]
struct FlowQueue<P> {
    fifo: Fifo<P>,
    codel: CodelState,
    deficit: i64,
    list: Option<List>,
}

#[derive(Debug)]
pub struct FqCodel<P> {
    params: FqCodelParams,
    limit: QueueLimit,
    ecn: bool,
    queues: Vec<FlowQueue<P>>,
    new_flows: VecDeque<usize>,
    old_flows: VecDeque<usize>,
    backlog: Backlog,
}

impl<P> FqCodel<P> {
    /// `params.flows` in 1..=[`MAX_FLOWS`], `params.quantum` > 0.
    pub fn new(params: FqCodelParams, limit: QueueLimit, ecn: bool) -> Self {
        let queues = (0..params.flows.max(1))
            .map(|_| FlowQueue {
                fifo: Fifo::default(),
                codel: CodelState::default(),
                deficit: 0,
                list: None,
            })
            .collect();
        FqCodel {
            params,
            limit,
            ecn,
            queues,
            new_flows: VecDeque::new(),
            old_flows: VecDeque::new(),
            backlog: Backlog::default(),
        }
    }

    /// The queue a flow hash maps to.
    pub fn queue_of(&self, flow: u32) -> usize {
        (flow % self.params.flows.max(1)) as usize
    }

    /// Queue `q`'s backlog and deficit (tests and statistics).
    pub fn queue_state(&self, q: usize) -> (Backlog, i64) {
        (self.queues[q].fifo.backlog(), self.queues[q].deficit)
    }

    /// The queues in the new and the old list, in order.
    pub fn lists(&self) -> (Vec<usize>, Vec<usize>) {
        (
            self.new_flows.iter().copied().collect(),
            self.old_flows.iter().copied().collect(),
        )
    }

    fn pop_front(&mut self, from_new: bool) {
        if from_new {
            self.new_flows.pop_front();
        } else {
            self.old_flows.pop_front();
        }
    }

    /// The non-empty queue holding the most bytes (the lowest index among equals).
    fn fattest(&self) -> Option<usize> {
        let mut best: Option<(usize, u64)> = None;
        for (i, q) in self.queues.iter().enumerate() {
            let bytes = q.fifo.backlog().bytes;
            if !q.fifo.is_empty() && best.is_none_or(|(_, b)| bytes > b) {
                best = Some((i, bytes));
            }
        }
        best.map(|(i, _)| i)
    }
}

impl<P: Send> Discipline<P> for FqCodel<P> {
    fn enqueue(&mut self, packet: Packet<P>, now: Nanos, cx: &mut Context<'_, P>) -> Result<(), Dropped<P>> {
        let packet = self.limit.admit(cx.on_wire, packet)?;
        let idx = self.queue_of(packet.flow);
        let size = packet.size;
        let q = &mut self.queues[idx];
        q.fifo.push(packet, now);
        self.backlog.add(size);
        if q.list.is_none() {
            q.list = Some(List::New);
            q.deficit = i64::from(self.params.quantum);
            self.new_flows.push_back(idx);
        }
        while !within(self.limit, self.backlog.plus(cx.on_wire)) {
            let fat = self.fattest().expect("over the limit: some queue holds a packet");
            let arriving = fat == idx && self.queues[fat].fifo.len() == 1;
            let (dropped, _) = self.queues[fat].fifo.pop().expect("the fattest queue is not empty");
            self.backlog.remove(dropped.size);
            if arriving {
                return Err(Dropped {
                    packet: dropped,
                    reason: DropReason::QueueFull,
                });
            }
            cx.drop(dropped, DropReason::QueueFull, now);
        }
        Ok(())
    }

    fn dequeue(&mut self, now: Nanos, cx: &mut Context<'_, P>) -> Option<Packet<P>> {
        loop {
            let (idx, from_new) = match (self.new_flows.front(), self.old_flows.front()) {
                (Some(&i), _) => (i, true),
                (None, Some(&i)) => (i, false),
                (None, None) => return None,
            };
            let q = &mut self.queues[idx];
            if q.deficit <= 0 {
                q.deficit += i64::from(self.params.quantum);
                q.list = Some(List::Old);
                self.pop_front(from_new);
                self.old_flows.push_back(idx);
                continue;
            }
            let before = q.fifo.backlog();
            let out = q.codel.dequeue(&self.params.codel, self.ecn, &mut q.fifo, now, cx);
            let after = q.fifo.backlog();
            self.backlog.packets -= before.packets - after.packets;
            self.backlog.bytes -= before.bytes - after.bytes;
            if let Some(p) = out {
                q.deficit -= i64::from(p.size);
                return Some(p);
            }
            q.list = from_new.then_some(List::Old);
            self.pop_front(from_new);
            if from_new {
                self.old_flows.push_back(idx);
            }
        }
    }

    fn backlog(&self) -> Backlog {
        self.backlog
    }
}

/// Whether `occupancy` (everything held, the newest packet included) is within `limit`.
fn within(limit: QueueLimit, occupancy: Backlog) -> bool {
    match limit {
        QueueLimit::Packets(n) => occupancy.packets <= u64::from(n),
        QueueLimit::Bytes(n) => occupancy.bytes <= n,
        QueueLimit::Unlimited => true,
    }
}
