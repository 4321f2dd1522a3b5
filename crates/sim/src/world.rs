//! The discrete-event loop: the engine's own forwarder (routes, link model, packet log)
//! with hosts that are the simulator's endpoints, in virtual nanoseconds. Every packet
//! is handed over exactly at its due time, so the log's actual time equals its model
//! time. Endpoints are visited in a fixed order, so a run is a function of its input.

use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddrV4};

use engine::forwarder::{Forwarder, Hosts};
use linkem::Nanos;

use engine::wire::flow_key;

use crate::endpoint::Endpoint;

/// Passes at one instant after which the simulator gives up: endpoints that keep
/// answering each other without time moving are a bug, not a workload.
const MAX_PASSES_PER_INSTANT: u32 = 100_000;

/// The hosts as the forwarder sees them: a queue of delivered packets, and virtual time.
#[derive(Default)]
pub struct SimHosts {
    inbox: Vec<(usize, Vec<u8>)>,
    now: Nanos,
}

impl Hosts for SimHosts {
    fn deliver(&mut self, host: usize, packet: &[u8]) -> bool {
        self.inbox.push((host, packet.to_vec()));
        true
    }

    fn now(&self) -> Nanos {
        self.now
    }
}

pub struct World {
    fwd: Forwarder<SimHosts>,
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
}

impl World {
    pub fn new(fwd: Forwarder<SimHosts>, addresses: &[Ipv4Addr]) -> World {
        World {
            fwd,
            endpoints: Vec::new(),
            clients: Vec::new(),
            by_address: HashMap::new(),
            host_of: addresses.iter().enumerate().map(|(i, a)| (*a, i)).collect(),
            unclaimed: 0,
            events: 0,
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
        for _ in 0..MAX_PASSES_PER_INSTANT {
            let inbox = std::mem::take(&mut self.fwd.hosts_mut().inbox);
            let mut touched = vec![false; self.endpoints.len()];
            for (_, packet) in inbox {
                self.events += 1;
                let to = flow_key(&packet)
                    .ok()
                    .map(|k| (k.proto, SocketAddrV4::new(Ipv4Addr::from(k.dst), k.dport)));
                match to.and_then(|to| self.by_address.get(&to)) {
                    Some(&i) => {
                        self.endpoints[i].receive(now, &packet);
                        touched[i] = true;
                    }
                    None => self.unclaimed += 1,
                }
            }
            let mut polled = false;
            for (i, touched) in touched.into_iter().enumerate() {
                if touched || self.endpoints[i].next_wakeup().is_some_and(|t| t <= now) {
                    self.events += 1;
                    self.endpoints[i].poll(now, &mut out);
                    polled = true;
                    self.send(&mut out, now);
                }
            }
            if !polled && self.fwd.hosts_mut().inbox.is_empty() {
                return Ok(());
            }
            if self.fwd.hosts_mut().inbox.is_empty()
                && !self.endpoints.iter().any(|e| e.next_wakeup().is_some_and(|t| t <= now))
            {
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
            let wake = self.endpoints.iter().filter_map(|e| e.next_wakeup()).min();
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
    pub fn finish(self, raw: &std::path::Path, end: Nanos) -> Result<Forwarder<SimHosts>, String> {
        for e in &self.endpoints {
            e.write_summary(raw, end)
                .map_err(|err| format!("{}: summary: {err}", raw.display()))?;
        }
        Ok(self.fwd)
    }
}
