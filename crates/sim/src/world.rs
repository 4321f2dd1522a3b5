//! The discrete-event loop: the engine's own forwarder (routes, link model, packet log)
//! with hosts that are the simulator's endpoints, in virtual nanoseconds. Every packet
//! is handed over exactly at its due time, so the log's actual time equals its model
//! time. Endpoints are visited in a fixed order, so a run is a function of its input.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::net::{Ipv4Addr, SocketAddrV4};

use engine::forwarder::{Forwarder, VirtualHosts};
use linkem::Nanos;

use wire::flow_key;

use crate::endpoint::Endpoint;

/// Passes at one instant after which the simulator gives up: endpoints that keep
/// answering each other without time moving are a bug, not a workload.
const MAX_PASSES_PER_INSTANT: u32 = 100_000;

/// Each endpoint's next wake-up as last asked, and those times in a min-heap by (time,
/// endpoint). An endpoint's answer changes only when it receives or is polled, so it is
/// asked again only then, not at every event; an entry whose time is no longer its
/// endpoint's is stale and skipped.
#[derive(Default)]
struct Wakes {
    at: Vec<Option<Nanos>>,
    heap: BinaryHeap<Reverse<(Nanos, usize)>>,
}

impl Wakes {
    fn set(&mut self, i: usize, t: Option<Nanos>) {
        if self.at[i] != t {
            self.at[i] = t;
            if let Some(t) = t {
                self.heap.push(Reverse((t, i)));
            }
        }
    }

    /// The earliest wake-up of any endpoint.
    fn next(&mut self) -> Option<Nanos> {
        while let Some(&Reverse((t, i))) = self.heap.peek() {
            if self.at[i] == Some(t) {
                return Some(t);
            }
            self.heap.pop();
        }
        None
    }

    /// Takes the endpoints due by `now` into `due`.
    fn take_due(&mut self, now: Nanos, due: &mut Vec<usize>) {
        while let Some(t) = self.next() {
            if t > now {
                return;
            }
            let Reverse((_, i)) = self.heap.pop().expect("a valid entry");
            self.at[i] = None;
            due.push(i);
        }
    }
}

pub struct World {
    fwd: Forwarder<VirtualHosts>,
    endpoints: Vec<Box<dyn Endpoint>>,
    /// Which of them are flows' clients: the run may end when they have all finished.
    clients: Vec<usize>,
    /// (IP protocol, address) → endpoint.
    by_address: HashMap<(u8, SocketAddrV4), usize>,
    host_of: HashMap<Ipv4Addr, usize>,
    /// Packets delivered to a host with no endpoint at their address (a host would
    /// answer ICMP port unreachable or a reset), or sent from no host's address.
    pub unclaimed: u64,
    /// Simulation events processed: endpoint polls and packet hand-overs.
    pub events: u64,
    wakes: Wakes,
}

impl World {
    pub fn new(fwd: Forwarder<VirtualHosts>, addresses: &[Ipv4Addr]) -> World {
        World {
            fwd,
            endpoints: Vec::new(),
            clients: Vec::new(),
            by_address: HashMap::new(),
            host_of: addresses.iter().enumerate().map(|(i, a)| (*a, i)).collect(),
            unclaimed: 0,
            events: 0,
            wakes: Wakes::default(),
        }
    }

    /// Adds an endpoint; `client`: a flow's client, whose end may end the run.
    pub fn add(&mut self, endpoint: Box<dyn Endpoint>, client: bool) -> Result<(), String> {
        let (proto, addr) = endpoint.address();
        if !self.host_of.contains_key(addr.ip()) {
            return Err(format!("{addr}: no host has this address"));
        }
        if self.by_address.insert((proto, addr), self.endpoints.len()).is_some() {
            return Err(format!("{addr}: two endpoints at one address"));
        }
        if client {
            self.clients.push(self.endpoints.len());
        }
        self.wakes.at.push(None);
        self.wakes.set(self.endpoints.len(), endpoint.next_wakeup());
        self.endpoints.push(endpoint);
        Ok(())
    }

    /// Puts the endpoints' packets on the network at their source hosts.
    fn send(&mut self, packets: &mut Vec<Vec<u8>>, now: Nanos) {
        for p in packets.drain(..) {
            let host = flow_key(&p)
                .ok()
                .and_then(|k| self.host_of.get(&Ipv4Addr::from(k.src)).copied());
            match host {
                Some(h) => self.fwd.ingress(h, &p, now),
                None => self.unclaimed += 1,
            }
        }
    }

    /// Everything that happens at `now`: deliveries to endpoints, endpoints due, what they
    /// send (and what that sends on ideal links at the same instant), until nothing is left.
    fn settle(&mut self, now: Nanos) -> Result<(), String> {
        let mut out = Vec::new();
        let mut due = Vec::new();
        for _ in 0..MAX_PASSES_PER_INSTANT {
            let inbox = std::mem::take(&mut self.fwd.hosts_mut().delivered);
            due.clear();
            for (_, packet) in inbox {
                self.events += 1;
                let to = flow_key(&packet)
                    .ok()
                    .map(|k| (k.proto, SocketAddrV4::new(Ipv4Addr::from(k.dst), k.dport)));
                match to.and_then(|to| self.by_address.get(&to)) {
                    Some(&i) => {
                        self.endpoints[i].receive(now, &packet);
                        due.push(i);
                    }
                    None => self.unclaimed += 1,
                }
            }
            // Those that received something or are due, each once, in endpoint order.
            self.wakes.take_due(now, &mut due);
            due.sort_unstable();
            due.dedup();
            for &i in &due {
                self.events += 1;
                self.endpoints[i].poll(now, &mut out);
                self.wakes.set(i, self.endpoints[i].next_wakeup());
                self.send(&mut out, now);
            }
            if self.fwd.hosts_mut().delivered.is_empty() && self.wakes.next().is_none_or(|t| t > now) {
                return Ok(());
            }
        }
        Err(format!(
            "t = {now} ns: endpoints still busy after {MAX_PASSES_PER_INSTANT} passes at one instant"
        ))
    }

    /// Runs from `start` until `end` (or until every flow's client has finished, with
    /// `stop_when_done`); returns the time the run ended.
    pub fn run(&mut self, start: Nanos, end: Nanos, stop_when_done: bool) -> Result<Nanos, String> {
        let mut now = start;
        loop {
            self.fwd.hosts_mut().now = now;
            self.fwd.run_due(now);
            self.settle(now)?;
            if stop_when_done && !self.clients.is_empty() && self.clients.iter().all(|&i| self.endpoints[i].finished())
            {
                return Ok(now);
            }
            let wake = self.wakes.next();
            // An endpoint that asks for a time already past runs at the next nanosecond.
            let next = [self.fwd.next_due(), wake]
                .into_iter()
                .flatten()
                .min()
                .map(|t| t.max(now + 1));
            match next {
                Some(t) if t <= end => now = t,
                _ => return Ok(end),
            }
        }
    }

    /// Writes every endpoint's summary; returns the forwarder for its statistics and log.
    pub fn finish(mut self, raw: &std::path::Path, end: Nanos) -> Result<Forwarder<VirtualHosts>, String> {
        for e in &mut self.endpoints {
            e.write_summary(raw, end)
                .map_err(|err| format!("{}: summary: {err}", raw.display()))?;
        }
        Ok(self.fwd)
    }
}
