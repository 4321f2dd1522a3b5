//! The network: moves each packet from the TUN of the host that sent it along the link
//! directions of its route to the TUN of the host it is for, asking `linkem` when each
//! hop is due. Model events are processed in global due-time order across all
//! directions, so a packet handed from one direction to the next enters it at its exact
//! due time however late the engine woke up.

use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::os::fd::RawFd;

use linkem::{DropReason, Nanos, Packet, Pipeline, PipelineEvent};

use crate::config::Config;
use crate::ipv4::{flow_key, FlowKey};
use crate::log::{reason, Event, PacketLog, NO_DIRECTION};
use crate::stats::{DirectionStats, Lateness, UnintendedDrops};
use crate::sys;

/// What the engine carries through the model with each packet.
#[derive(Clone)]
pub struct Carried {
    bytes: Box<[u8]>,
    key: FlowKey,
    route: u32,
    hop: u16,
}

struct Route {
    directions: Vec<u16>,
    egress: usize,
}

pub struct Forwarder {
    tun_fds: Vec<RawFd>,
    pipelines: Vec<Pipeline<Carried>>,
    routes: Vec<Route>,
    route_of: HashMap<(usize, Ipv4Addr), u32>,
    next_id: u64,
    log: PacketLog,
    pub directions: Vec<DirectionStats>,
    pub unintended: UnintendedDrops,
    pub lateness: Lateness,
    pub packets_in: u64,
    pub packets_out: u64,
}

impl Forwarder {
    pub fn new(cfg: &Config, log: PacketLog) -> Result<Forwarder, String> {
        let mut pipelines = Vec::new();
        for (i, d) in cfg.directions.iter().enumerate() {
            let p = linkem::spec::build_pipeline(&d.spec, d.seed).map_err(|e| format!("directions[{i}] ({}): {e}", d.name))?;
            pipelines.push(p);
        }
        let mut routes = Vec::new();
        let mut route_of = HashMap::new();
        for r in &cfg.routes {
            route_of.insert((r.ingress, r.dst), routes.len() as u32);
            routes.push(Route { directions: r.directions.iter().map(|&d| d as u16).collect(), egress: r.egress });
        }
        Ok(Forwarder {
            tun_fds: cfg.hosts.iter().map(|h| h.tun_fd).collect(),
            pipelines,
            routes,
            route_of,
            next_id: 0,
            log,
            directions: cfg.directions.iter().map(|d| DirectionStats { name: d.name.clone(), ..Default::default() }).collect(),
            unintended: UnintendedDrops::default(),
            lateness: Lateness::default(),
            packets_in: 0,
            packets_out: 0,
        })
    }

    pub fn tun_fds(&self) -> &[RawFd] {
        &self.tun_fds
    }

    pub fn next_due(&self) -> Option<Nanos> {
        self.pipelines.iter().filter_map(|p| p.next_due()).min()
    }

    /// A packet read from host `ingress`'s TUN at `now`.
    pub fn ingress(&mut self, ingress: usize, bytes: &[u8], now: Nanos) {
        // Everything due before this arrival happens first, so no direction is ever
        // offered a packet earlier than one it has already handed out.
        self.run_due(now);
        self.packets_in += 1;
        let id = self.next_id;
        self.next_id += 1;
        let size = bytes.len() as u32;
        let Some(key) = flow_key(bytes) else {
            self.unintended.not_ipv4 += 1;
            self.log.record(now, id, &FlowKey::default(), size, NO_DIRECTION, Event::Drop, reason::NOT_IPV4, false);
            return;
        };
        let Some(&route) = self.route_of.get(&(ingress, Ipv4Addr::from(key.dst))) else {
            self.unintended.no_route += 1;
            self.log.record(now, id, &key, size, NO_DIRECTION, Event::Drop, reason::NO_ROUTE, false);
            return;
        };
        let carried = Carried { bytes: bytes.into(), key, route, hop: 0 };
        self.enter_hop(Packet::new(id, size, carried), now);
        self.run_due(now);
    }

    /// Puts a packet onto the direction of its current hop, or delivers it if the route
    /// has no more hops.
    fn enter_hop(&mut self, packet: Packet<Carried>, at: Nanos) {
        let route = &self.routes[packet.payload.route as usize];
        let Some(&dir) = route.directions.get(packet.payload.hop as usize) else {
            let egress = route.egress;
            return self.deliver(egress, packet, at);
        };
        self.directions[dir as usize].arrivals += 1;
        self.log.record(at, packet.id, &packet.payload.key, packet.size, dir, Event::Arrival, 0, packet.copy);
        if let Some(ev) = self.pipelines[dir as usize].push(packet, at) {
            self.handle(dir, ev);
        }
    }

    fn handle(&mut self, dir: u16, ev: PipelineEvent<Carried>) {
        match ev {
            PipelineEvent::Departed { mut packet, at } => {
                let st = &mut self.directions[dir as usize];
                st.departures += 1;
                st.bytes_departed += packet.size as u64;
                self.log.record(at, packet.id, &packet.payload.key, packet.size, dir, Event::Departure, 0, packet.copy);
                packet.payload.hop += 1;
                self.enter_hop(packet, at);
            }
            PipelineEvent::Dropped { packet, at, reason, .. } => {
                let st = &mut self.directions[dir as usize];
                match reason {
                    DropReason::QueueFull => st.drops_queue_full += 1,
                    DropReason::RandomLoss => st.drops_random_loss += 1,
                    DropReason::MergeDiscard => st.drops_merge_discard += 1,
                }
                self.log.record(at, packet.id, &packet.payload.key, packet.size, dir, Event::Drop, reason as u8, packet.copy);
            }
        }
    }

    fn deliver(&mut self, egress: usize, packet: Packet<Carried>, due: Nanos) {
        // Lateness is taken as the hand-over starts: the write itself runs the host's
        // receive path (IP, transport, waking the reader) in this thread.
        let late = crate::clock::now_ns().saturating_sub(due);
        match sys::write(self.tun_fds[egress], &packet.payload.bytes) {
            Ok(_) => {
                self.packets_out += 1;
                self.lateness.add(late);
            }
            Err(_) => {
                self.unintended.tun_write_failed += 1;
                let now = crate::clock::now_ns();
                self.log.record(now, packet.id, &packet.payload.key, packet.size, NO_DIRECTION, Event::Drop, reason::TUN_WRITE_FAILED, packet.copy);
            }
        }
    }

    /// Processes every model event due at or before `now`, earliest first across all
    /// directions.
    pub fn run_due(&mut self, now: Nanos) {
        loop {
            let mut best: Option<(usize, Nanos)> = None;
            for (i, p) in self.pipelines.iter().enumerate() {
                if let Some(t) = p.next_due() {
                    if t <= now && best.map_or(true, |(_, b)| t < b) {
                        best = Some((i, t));
                    }
                }
            }
            let Some((dir, t)) = best else { return };
            if let Some(ev) = self.pipelines[dir].step(t) {
                self.handle(dir as u16, ev);
            }
        }
    }

    pub fn close_log(self) -> std::io::Result<()> {
        self.log.close()
    }
}
