//! The network: moves each packet from the interface of the host that sent it along the
//! link directions of its route to the interface of the host it is for, asking `linkem` when each
//! hop is due. Model events are processed in global due-time order across all
//! directions, so a packet handed from one direction to the next enters it at its exact
//! due time however late the engine woke up.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::net::Ipv4Addr;

use linkem::{Direction, DirectionEvent, DropReason, Nanos, Packet, PacketInfo, Summarize};
use wire::ipv4::{Ecn, Ipv4Packet};
use wire::{flow_key, FlowKey};

use crate::capture::Capture;
use crate::config::Config;
use crate::log::{flag, reason, Event, PacketLog, NO_DIRECTION};
use crate::stats::{DirectionStats, Lateness, UnintendedDrops};

/// The hosts the network hands packets to, and the time: the real-time engine writes to
/// TUN devices or veth ends and reads CLOCK_MONOTONIC; the simulator queues packets for
/// its endpoints and answers its virtual time.
pub trait Hosts {
    /// Hands IPv4 packet `packet` to host `host`: the time the hand-over that succeeded
    /// began (a host that cannot take a packet at once is retried, and the packet is late
    /// by that much), or `None` if it failed (an unintended drop).
    fn deliver(&mut self, host: usize, packet: &[u8]) -> Option<Nanos>;
    /// The actual time now (what the log records as `t_actual_ns`).
    fn now(&self) -> Nanos;
}

/// Hosts in virtual time (the simulator's, and the tests'): the packets handed over wait
/// in `delivered` until the caller takes them, and the time is what `now` is set to, so
/// every hand-over happens when it is due.
#[derive(Default)]
pub struct VirtualHosts {
    pub delivered: Vec<(usize, Vec<u8>)>,
    pub now: Nanos,
}

impl Hosts for VirtualHosts {
    fn deliver(&mut self, host: usize, packet: &[u8]) -> Option<Nanos> {
        self.delivered.push((host, packet.to_vec()));
        Some(self.now)
    }

    fn now(&self) -> Nanos {
        self.now
    }
}

/// What the engine carries through the model with each packet.
#[derive(Clone)]
pub struct Carried {
    bytes: Box<[u8]>,
    key: FlowKey,
    route: u32,
    hop: u16,
}

impl Carried {
    /// Writes the codepoint the model gave the packet into its IP header if a queue
    /// marked it CE; returns whether it did (the header was ECT(0)/ECT(1) until now).
    fn write_ce(&mut self, model: Ecn) -> bool {
        if model != Ecn::Ce {
            return false;
        }
        // The packet passed `flow_key` at ingress, so it holds a whole IPv4 header.
        let mut ip = Ipv4Packet::new_unchecked(&mut self.bytes[..]);
        if ip.ecn() == Ecn::Ce {
            return false;
        }
        ip.set_ecn(Ecn::Ce);
        ip.fill_checksum();
        true
    }
}

/// A packet inside a multipath direction is logged on its legs with its flow key.
impl Summarize for Carried {
    type Summary = FlowKey;
    fn summarize(&self) -> FlowKey {
        self.key
    }
}

struct Route {
    directions: Vec<u16>,
    /// Per hop, the leg of a multipath direction the packet is pinned to (empty: none).
    pinned: Vec<Option<u16>>,
    egress: usize,
}

/// What holding one packet costs beyond its bytes (its `Packet`, the boxed buffer's
/// allocation, queue slots), for the memory limit: an estimate, on the safe side.
pub const PACKET_OVERHEAD: u64 = 256;

fn held(size: u32) -> u64 {
    size as u64 + PACKET_OVERHEAD
}

pub struct Forwarder<H: Hosts> {
    hosts: H,
    /// The latest time the model has been run to: an arrival stamped earlier (the
    /// kernel's timestamp of a packet read after a later due event was processed) enters
    /// the model at this time instead, so no direction sees time go backwards.
    watermark: Nanos,
    /// Largest IP packet a host may send (its link MTU); a larger one is an unintended drop.
    mtu: u32,
    /// Bytes of the packets in the models (originals: a duplicate stage's copies are not
    /// counted, at most doubling it), and the most allowed (`memory_limit_bytes`).
    held_bytes: u64,
    memory_limit: u64,
    models: Vec<Direction<Carried>>,
    /// Each model's next due time as last read, and those times in a min-heap by (time,
    /// direction), so finding the next event does not ask every direction each time (an
    /// entry whose time is no longer its direction's is stale and skipped; the top is
    /// never stale).
    due: Vec<Option<Nanos>>,
    queue: BinaryHeap<Reverse<(Nanos, usize)>>,
    /// `leg_index[d][k]`: the log/stats direction index of leg k of direction d.
    leg_index: Vec<Vec<u16>>,
    routes: Vec<Route>,
    route_of: HashMap<(usize, Ipv4Addr), u32>,
    next_id: u64,
    log: PacketLog,
    capture: Option<Capture>,
    pub directions: Vec<DirectionStats>,
    pub unintended: UnintendedDrops,
    pub lateness: Lateness,
    /// What packets the model released at one instant waited for the ones before them to
    /// be handed over (kept out of `lateness`; see `deliver`).
    pub burst_wait: Lateness,
    /// The due time of the last hand-over and the real time it ended.
    last_handover: Option<(Nanos, Nanos)>,
    /// How much later than its stamp each arrival from a host entered the model: 0 unless
    /// the engine had already run the model past the stamp (it fell behind), which shifts
    /// that packet's timing and can bunch arrivals.
    pub arrival_shift: Lateness,
    pub packets_in: u64,
    pub packets_out: u64,
}

impl<H: Hosts> Forwarder<H> {
    pub fn new(cfg: &Config, hosts: H, log: PacketLog) -> Result<Forwarder<H>, String> {
        let mut models = Vec::new();
        for (i, d) in cfg.directions.iter().enumerate() {
            let m =
                linkem::build_direction(&d.spec, d.seed).map_err(|e| format!("directions[{i}] ({}): {e}", d.name))?;
            models.push(m);
        }
        let leg_index = cfg.leg_indices();
        let mut directions: Vec<DirectionStats> = cfg
            .directions
            .iter()
            .zip(&leg_index)
            .map(|(d, legs)| DirectionStats {
                name: d.name.clone(),
                legs: (!legs.is_empty()).then(|| legs.clone()),
                ..Default::default()
            })
            .collect();
        for (i, d) in cfg.directions.iter().enumerate() {
            for k in 0..d.legs() {
                directions.push(DirectionStats {
                    name: d.leg_name(k),
                    leg_of: Some(i),
                    ..Default::default()
                });
            }
        }
        let mut routes = Vec::new();
        let mut route_of = HashMap::new();
        for r in &cfg.routes {
            route_of.insert((r.ingress, r.dst), routes.len() as u32);
            routes.push(Route {
                directions: r.directions.iter().map(|&d| d as u16).collect(),
                pinned: r.legs.iter().flatten().map(|l| l.map(|l| l as u16)).collect(),
                egress: r.egress,
            });
        }
        let n = models.len();
        let mut fwd = Forwarder {
            hosts,
            watermark: 0,
            mtu: cfg.mtu,
            held_bytes: 0,
            memory_limit: cfg.memory_limit_bytes,
            models,
            due: vec![None; n],
            queue: BinaryHeap::new(),
            leg_index: leg_index
                .into_iter()
                .map(|l| l.into_iter().map(|i| i as u16).collect())
                .collect(),
            routes,
            route_of,
            next_id: 0,
            log,
            capture: None,
            directions,
            unintended: UnintendedDrops::default(),
            lateness: Lateness::default(),
            burst_wait: Lateness::default(),
            last_handover: None,
            arrival_shift: Lateness::default(),
            packets_in: 0,
            packets_out: 0,
        };
        for i in 0..n {
            fwd.refresh(i);
        }
        Ok(fwd)
    }

    /// Reads direction `i`'s next due time again after it changed.
    fn refresh(&mut self, i: usize) {
        let d = self.models[i].next_due();
        if d != self.due[i] {
            self.due[i] = d;
            if let Some(t) = d {
                self.queue.push(Reverse((t, i)));
            }
        }
        while let Some(&Reverse((t, k))) = self.queue.peek() {
            if self.due[k] == Some(t) {
                break;
            }
            self.queue.pop();
        }
    }

    /// Captures the packets leaving the directions `capture` lists (pcapng).
    /// The scenario's time 0 is `t0`: every trace-driven link starts its trace there (at
    /// its offset). What was due before `t0` is processed first, on the old timeline.
    pub fn set_origin(&mut self, t0: Nanos) {
        self.run_due(t0);
        for i in 0..self.models.len() {
            self.models[i].set_origin(t0);
            self.refresh(i);
        }
    }

    pub fn set_capture(&mut self, capture: Capture) {
        self.capture = Some(capture);
    }

    pub fn next_due(&self) -> Option<Nanos> {
        self.queue.peek().map(|&Reverse((t, _))| t)
    }

    /// A packet that came out of host `ingress` at `stamp` (the kernel's receive
    /// timestamp, or the read time for a TUN).
    pub fn ingress(&mut self, ingress: usize, bytes: &[u8], stamp: Nanos) {
        // Everything due before this arrival happens first, so no direction is ever
        // offered a packet earlier than one it has already handed out.
        let now = stamp.max(self.watermark);
        self.arrival_shift.add(now - stamp);
        self.run_due(now);
        self.packets_in += 1;
        let id = self.next_id;
        self.next_id += 1;
        let size = bytes.len() as u32;
        let Ok(key) = flow_key(bytes) else {
            self.unintended.not_ipv4 += 1;
            self.log.record(
                now,
                stamp,
                id,
                &FlowKey::default(),
                size,
                NO_DIRECTION,
                Event::Drop,
                reason::NOT_IPV4,
                0,
            );
            return;
        };
        let Some(&route) = self.route_of.get(&(ingress, Ipv4Addr::from(key.dst))) else {
            self.unintended.no_route += 1;
            self.log.record(
                now,
                stamp,
                id,
                &key,
                size,
                NO_DIRECTION,
                Event::Drop,
                reason::NO_ROUTE,
                0,
            );
            return;
        };
        let refused = if size > self.mtu {
            Some((&mut self.unintended.oversize, reason::OVERSIZE))
        } else if self.held_bytes + held(size) > self.memory_limit {
            Some((&mut self.unintended.memory_limit, reason::MEMORY_LIMIT))
        } else {
            None
        };
        if let Some((count, why)) = refused {
            *count += 1;
            self.log
                .record(now, stamp, id, &key, size, NO_DIRECTION, Event::Drop, why, 0);
            return;
        }
        self.held_bytes += held(size);
        let ecn = Ipv4Packet::new_unchecked(bytes).ecn();
        let carried = Carried {
            bytes: bytes.into(),
            key,
            route,
            hop: 0,
        };
        let packet = Packet::new(id, size, carried).with_flow(key.flow_hash()).with_ecn(ecn);
        self.enter_hop(packet, now, stamp);
        self.run_due(now);
    }

    /// Puts a packet onto the direction of its current hop, or delivers it if the route
    /// has no more hops.
    /// `actual`: the real time of the event (the kernel's stamp on the first hop).
    fn enter_hop(&mut self, packet: Packet<Carried>, at: Nanos, actual: Nanos) {
        let route = &self.routes[packet.payload.route as usize];
        let hop = packet.payload.hop as usize;
        let Some(&dir) = route.directions.get(hop) else {
            let egress = route.egress;
            self.release(&packet);
            self.deliver(egress, &packet, at);
            return;
        };
        let pinned = route.pinned.get(hop).copied().flatten();
        self.directions[dir as usize].arrivals += 1;
        self.log_packet(&PacketInfo::of(&packet), dir, (at, actual), (Event::Arrival, 0), 0);
        // Whatever happens at `at` itself (a drop at the first stage) is reported by the
        // model's `step`, which `run_due` calls next.
        match pinned {
            None => self.models[dir as usize].push(packet, at),
            Some(leg) => self.models[dir as usize].push_on_leg(packet, leg as usize, at),
        }
        self.refresh(dir as usize);
    }

    fn handle(&mut self, dir: u16, ev: DirectionEvent<Carried>) {
        match ev {
            DirectionEvent::Departed { mut packet, at } => {
                let marked = packet.payload.write_ce(packet.ecn);
                let flags = if marked { flag::CE_MARKED } else { 0 };
                let st = &mut self.directions[dir as usize];
                st.departures += 1;
                st.bytes_departed += packet.size as u64;
                packet.payload.hop += 1;
                let route = &self.routes[packet.payload.route as usize];
                if packet.payload.hop as usize >= route.directions.len() {
                    // The last hop: the departure's real time is the hand-over to the host.
                    let egress = route.egress;
                    self.release(&packet);
                    let handed = self.deliver(egress, &packet, at);
                    self.log_packet(
                        &PacketInfo::of(&packet),
                        dir,
                        (at, handed),
                        (Event::Departure, 0),
                        flags,
                    );
                    if let Some(c) = &mut self.capture {
                        c.packet(dir, handed, &packet.payload.bytes);
                    }
                } else {
                    let now = self.hosts.now();
                    self.log_packet(&PacketInfo::of(&packet), dir, (at, now), (Event::Departure, 0), flags);
                    if let Some(c) = &mut self.capture {
                        c.packet(dir, now, &packet.payload.bytes);
                    }
                    self.enter_hop(packet, at, now);
                }
            }
            DirectionEvent::Dropped { packet, at, reason, .. } => self.drop(dir, &packet, at, reason),
            DirectionEvent::LegArrived { leg, info, at } => {
                let leg = self.leg_index[dir as usize][leg];
                self.directions[leg as usize].arrivals += 1;
                let now = self.hosts.now();
                self.log_packet(&info, leg, (at, now), (Event::Arrival, 0), 0);
            }
            DirectionEvent::LegDeparted { leg, info, at } => {
                let leg = self.leg_index[dir as usize][leg];
                let st = &mut self.directions[leg as usize];
                st.departures += 1;
                st.bytes_departed += info.size as u64;
                let now = self.hosts.now();
                self.log_packet(&info, leg, (at, now), (Event::Departure, 0), 0);
            }
            DirectionEvent::LegDropped {
                leg,
                packet,
                at,
                reason,
                ..
            } => {
                let leg = self.leg_index[dir as usize][leg];
                self.drop(leg, &packet, at, reason);
            }
            // Logged on the multipath direction itself: the packet came off its leg.
            DirectionEvent::MergeDiscarded { packet, at, .. } => self.drop(dir, &packet, at, DropReason::MergeDiscard),
            // No packet to log; the merge counts them (statistics, `merge.gap_skipped`).
            DirectionEvent::GapSkipped { .. } => {}
            // Counted when they happen; logged as a flag on the departure, where the engine
            // rewrites the header (a mark of a packet already CE changes nothing there).
            DirectionEvent::Marked { .. } => self.directions[dir as usize].marks += 1,
            DirectionEvent::LegMarked { leg, .. } => {
                let leg = self.leg_index[dir as usize][leg];
                self.directions[leg as usize].marks += 1;
            }
        }
    }

    /// Logs the packet `info` describes (`PacketInfo::of` a packet, or a leg's report) at
    /// log direction `dir`: (model time, real time), (event, reason), and `flags` beside
    /// its copy flag.
    fn log_packet(
        &mut self,
        info: &PacketInfo<FlowKey>,
        dir: u16,
        (at, actual): (Nanos, Nanos),
        (event, why): (Event, u8),
        flags: u8,
    ) {
        let flags = flags | flag::copy(info.copy);
        self.log
            .record(at, actual, info.id, &info.summary, info.size, dir, event, why, flags);
    }

    /// A packet leaves the models (handed to its host or dropped).
    fn release(&mut self, packet: &Packet<Carried>) {
        if !packet.copy {
            debug_assert!(self.held_bytes >= held(packet.size), "released more than held");
            self.held_bytes = self.held_bytes.saturating_sub(held(packet.size));
        }
    }

    /// Counts and logs a drop at log direction `dir`.
    fn drop(&mut self, dir: u16, packet: &Packet<Carried>, at: Nanos, reason: DropReason) {
        self.release(packet);
        let st = &mut self.directions[dir as usize];
        match reason {
            DropReason::QueueFull => st.drops_queue_full += 1,
            DropReason::RandomLoss => st.drops_random_loss += 1,
            DropReason::MergeDiscard => st.drops_merge_discard += 1,
            DropReason::AqmDrop => st.drops_aqm += 1,
        }
        let now = self.hosts.now();
        self.log_packet(&PacketInfo::of(packet), dir, (at, now), (Event::Drop, reason as u8), 0);
    }

    /// Hands a packet to host `egress`; returns the real time the hand-over started.
    fn deliver(&mut self, egress: usize, packet: &Packet<Carried>, due: Nanos) -> Nanos {
        // Lateness is taken as the hand-over starts: without receive steering the write
        // itself runs the host's receive path (IP, transport, waking the reader) in this
        // thread.
        let now = self.hosts.now();
        let Some(handed) = self.hosts.deliver(egress, &packet.payload.bytes) else {
            self.unintended.host_write_failed += 1;
            let event = (Event::Drop, reason::HOST_WRITE_FAILED);
            self.log_packet(&PacketInfo::of(packet), NO_DIRECTION, (due, now), event, 0);
            return now;
        };
        self.packets_out += 1;
        // Packets due at one instant (a merge releasing in order what it held, a burst the
        // model lets through at once) go to the hosts one after another, as through any
        // interface: each can start only when the one before it was handed over. Its
        // lateness counts from then, and the wait behind its burst apart, so that the
        // engine's own lateness (waking late, being preempted) is what `lateness` shows.
        let start = match self.last_handover {
            Some((last_due, last_end)) if last_due == due => last_end.max(due),
            _ => due,
        };
        self.lateness.add(handed.saturating_sub(start));
        if start > due {
            self.burst_wait.add(start - due);
        }
        self.last_handover = Some((due, self.hosts.now()));
        handed
    }

    /// Processes every model event due at or before `now`, earliest first across all
    /// directions.
    pub fn run_due(&mut self, now: Nanos) {
        self.watermark = self.watermark.max(now);
        // The earliest due event first, the lowest direction first among equal times.
        while let Some(&Reverse((t, dir))) = self.queue.peek() {
            if t > now {
                return;
            }
            self.queue.pop();
            self.due[dir] = None;
            if let Some(ev) = self.models[dir].step(t) {
                self.handle(dir as u16, ev);
            }
            self.refresh(dir);
        }
    }

    /// The statistics of every log direction (configured directions, then legs), with
    /// the merges' counters; leaves empty ones behind.
    pub fn take_direction_stats(&mut self) -> Vec<DirectionStats> {
        for (st, model) in self.directions.iter_mut().zip(&self.models) {
            if let Direction::Multipath(m) = model {
                st.merge = Some(m.merge_stats());
            }
        }
        std::mem::take(&mut self.directions)
    }

    /// The hosts (the simulator takes the packets delivered to them from here).
    pub fn hosts_mut(&mut self) -> &mut H {
        &mut self.hosts
    }

    /// Writes out the packet log and the capture; the first I/O error, naming which.
    pub fn close_outputs(self) -> Result<(), String> {
        let log = self.log.close().map_err(|e| format!("packet log: {e}"));
        let capture = match self.capture {
            Some(c) => c.close().map_err(|e| format!("capture: {e}")),
            None => Ok(()),
        };
        log.and(capture)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::RECORD_SIZE;

    const MS: u64 = 1_000_000;

    fn udp_packet() -> Vec<u8> {
        let ip = wire::ipv4::Ipv4Repr::new([10, 0, 0, 1].into(), [10, 0, 0, 2].into(), 0);
        wire::build::udp(&ip, 4000, 5000, &[], false).unwrap()
    }

    /// (t_ns, packet_id, direction, event, reason, flags) of a log record.
    type Record = (u64, u64, u16, u8, u8, u8);

    fn read_log(path: &std::path::Path) -> Vec<Record> {
        let bytes = std::fs::read(path).unwrap();
        bytes[16..]
            .chunks(RECORD_SIZE)
            .map(|r| {
                let u64_at = |o: usize| u64::from_le_bytes(r[o..o + 8].try_into().unwrap());
                (
                    u64_at(0),
                    u64_at(8),
                    u16::from_le_bytes([r[30], r[31]]),
                    r[33],
                    r[34],
                    r[35],
                )
            })
            .collect()
    }

    /// Runs `packets` (each with the time it comes out of host a) through the engine
    /// configured with `directions` (JSON list) and `route_extra` appended to the one
    /// route, a → b over direction 0, in virtual time. Returns the log records, the
    /// direction statistics and the bytes host b received.
    fn run_config(
        test: &str,
        directions: &str,
        route_extra: &str,
        packets: &[(Vec<u8>, u64)],
    ) -> (Vec<Record>, Vec<DirectionStats>, Vec<u8>) {
        run_config_with(test, "", directions, route_extra, packets)
    }

    /// `run_config` with `top_extra` (`"key": value, `) added to the configuration.
    fn run_config_with(
        test: &str,
        top_extra: &str,
        directions: &str,
        route_extra: &str,
        packets: &[(Vec<u8>, u64)],
    ) -> (Vec<Record>, Vec<DirectionStats>, Vec<u8>) {
        let dir = std::env::temp_dir().join(format!("tlab-fwd-{test}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let log_path = dir.join("packets.tlog");
        let cfg = Config::parse(&format!(
            r#"{{"log_path": "unused", "stats_path": "unused", {top_extra}
                "hosts": [{{"name": "a", "tun_fd": 100}}, {{"name": "b", "tun_fd": 101}}],
                "directions": {directions},
                "routes": [{{"ingress": 0, "dst": "10.0.0.2", "directions": [0], "egress": 1{route_extra}}}]}}"#
        ))
        .unwrap();
        let mut fwd = Forwarder::new(&cfg, VirtualHosts::default(), PacketLog::create(&log_path).unwrap()).unwrap();
        for (bytes, at) in packets {
            fwd.ingress(0, bytes, *at);
        }
        fwd.run_due(u64::MAX);
        assert_eq!(fwd.next_due(), None);
        let stats = fwd.take_direction_stats();
        let delivered = std::mem::take(&mut fwd.hosts_mut().delivered);
        fwd.close_outputs().unwrap();
        let log = read_log(&log_path);
        let received: Vec<u8> = delivered
            .into_iter()
            .inspect(|(host, _)| assert_eq!(*host, 1, "delivered to b"))
            .flat_map(|(_, p)| p)
            .collect();
        std::fs::remove_dir_all(&dir).unwrap();
        (log, stats, received)
    }

    /// Runs `n` UDP packets, one per ms from T0, from host a to host b over one
    /// multipath direction (legs of 10 and 30 ms, duplication mode, t-Reordering 100 ms)
    /// in virtual time. `route_extra` is appended to the route.
    fn run_multipath(test: &str, n: u64, route_extra: &str) -> (Vec<Record>, Vec<DirectionStats>, usize) {
        let directions = format!(
            r#"[{{"name": "dc", "seed": 3, "spec": {{
                    "legs": [{{"delay": {d1}}}, {{"delay": {d2}}}],
                    "split": {{"mode": "duplicate"}}, "merge": {{"enabled": true, "t_reordering_ns": {t}}}}}}}]"#,
            d1 = 10 * MS,
            d2 = 30 * MS,
            t = 100 * MS
        );
        let packets: Vec<_> = (0..n).map(|i| (udp_packet(), T0 + i * MS)).collect();
        let (log, stats, received) = run_config(test, &directions, route_extra, &packets);
        (log, stats, received.len())
    }

    const T0: u64 = 1_000 * MS;

    fn records_of(log: &[Record], id: u64) -> Vec<(u64, u16, u8, u8)> {
        let mut got: Vec<_> = log
            .iter()
            .filter(|r| r.1 == id)
            .map(|&(t, _, d, e, r, _)| (t, d, e, r))
            .collect();
        got.sort();
        got
    }

    /// Duplication mode: each leg is logged under its own index, the direction logs the
    /// split arrival, the merge delivery and the merge's discard of the second copy
    /// (reason 3), and the statistics carry the merge's counters.
    #[test]
    fn multipath_legs_are_logged_as_directions_of_their_own() {
        let n = 20u64;
        let (log, stats, received) = run_multipath("legs-logged", n, "");
        for id in 0..n {
            let t = T0 + id * MS;
            let mut want = vec![
                (t, 0, 1, 0),           // split
                (t, 1, 1, 0),           // leg 1 arrival
                (t, 2, 1, 0),           // leg 2 arrival
                (t + 10 * MS, 0, 2, 0), // merge delivery
                (t + 10 * MS, 1, 2, 0), // leg 1 departure
                (t + 30 * MS, 0, 3, 3), // second copy discarded by the merge
                (t + 30 * MS, 2, 2, 0), // leg 2 departure
            ];
            want.sort();
            assert_eq!(records_of(&log, id), want, "packet {id}");
        }
        assert_eq!(received, n as usize * udp_packet().len(), "every packet delivered once");

        assert_eq!(stats.len(), 3);
        let (d, l1, l2) = (&stats[0], &stats[1], &stats[2]);
        assert_eq!((d.arrivals, d.departures, d.drops_merge_discard), (n, n, n));
        assert_eq!(d.legs, Some(vec![1, 2]));
        let m = d.merge.unwrap();
        assert_eq!(
            (
                m.delivered,
                m.discarded,
                m.gap_skipped,
                m.timer_expiries,
                m.max_buffered
            ),
            (n, n, 0, 0, 0)
        );
        for (leg, name) in [(l1, "dc.leg1"), (l2, "dc.leg2")] {
            assert_eq!(
                (leg.name.as_str(), leg.leg_of, leg.arrivals, leg.departures),
                (name, Some(0), n, n)
            );
            assert!(leg.merge.is_none());
        }
        let json = serde_json::to_value(&stats).unwrap();
        assert_eq!(json[0]["merge"]["discarded"], n);
        assert!(json[1].get("merge").is_none() && json[1]["leg_of"] == 0);
    }

    /// A route pinned to leg 2: its packets ride that leg only and leave the direction
    /// with it, without split or merge.
    #[test]
    fn pinned_route_rides_one_leg() {
        let n = 5u64;
        let (log, stats, received) = run_multipath("pinned", n, r#", "legs": [1]"#);
        for id in 0..n {
            let t = T0 + id * MS;
            let want = vec![
                (t, 0, 1, 0),
                (t, 2, 1, 0),
                (t + 30 * MS, 0, 2, 0),
                (t + 30 * MS, 2, 2, 0),
            ];
            assert_eq!(records_of(&log, id), want, "packet {id}");
        }
        assert_eq!(received, n as usize * udp_packet().len());
        assert_eq!(
            (
                stats[0].arrivals,
                stats[0].departures,
                stats[1].arrivals,
                stats[2].departures
            ),
            (n, n, 0, n)
        );
        assert_eq!(stats[0].merge.unwrap().delivered, 0);
    }

    /// A 100-byte UDP packet from port `sport` with ECN codepoint `ecn` and a valid
    /// header checksum.
    fn udp_packet_ecn(sport: u16, ecn: Ecn) -> Vec<u8> {
        let mut p = udp_packet();
        p.resize(100, 0);
        p[2..4].copy_from_slice(&100u16.to_be_bytes());
        p[20..22].copy_from_slice(&sport.to_be_bytes());
        let mut ip = Ipv4Packet::new_unchecked(&mut p[..]);
        ip.set_dscp(0b101110);
        ip.set_ecn(ecn);
        ip.fill_checksum();
        p
    }

    /// A CoDel queue with ECN on (target 1 ms, interval 10 ms) at 1 Mbit/s, offered a
    /// burst of 200 packets alternating between an ECT(0) flow and a not-ECT flow: the
    /// ECT(0) packets are all delivered, some as CE with the header checksum recomputed
    /// and the DSCP untouched, each such departure flagged `ce_marked` in the log; the
    /// not-ECT flow is dropped (reason 4) and never marked; the statistics count the marks.
    #[test]
    fn ecn_marks_are_written_into_the_header_and_logged() {
        let directions = r#"[{"name": "ab", "seed": 1, "spec": {"rate": {"constant": {"bits_per_sec": 1000000}},
            "queue": {"discipline": "codel", "packets": 1000, "target_ns": 1000000,
                      "interval_ns": 10000000, "ecn": true}}}]"#;
        let packets: Vec<_> = (0..200u64)
            .map(|i| {
                let ecn = if i % 2 == 0 { Ecn::Ect0 } else { Ecn::NotEct };
                (udp_packet_ecn(4000 + (i % 2) as u16, ecn), T0)
            })
            .collect();
        let (log, stats, received) = run_config("ecn", directions, "", &packets);

        let mut ce = 0;
        let mut per_flow = [0u64; 2];
        for p in received.chunks(100) {
            let ip = Ipv4Packet::new_checked(p).unwrap();
            assert!(ip.verify_checksum(), "delivered with a valid checksum");
            assert_eq!(ip.dscp(), 0b101110, "DSCP untouched");
            let flow = (u16::from_be_bytes([p[20], p[21]]) - 4000) as usize;
            per_flow[flow] += 1;
            match (flow, ip.ecn()) {
                (0, Ecn::Ce) => ce += 1,
                (0, Ecn::Ect0) | (1, Ecn::NotEct) => {}
                other => panic!("flow and codepoint {other:?}"),
            }
        }
        assert_eq!(per_flow[0], 100, "every ECT(0) packet delivered");
        assert!(ce > 0, "some ECT(0) packets marked");
        let aqm_drops = log.iter().filter(|r| r.3 == Event::Drop as u8 && r.4 == 4).count() as u64;
        assert!(
            aqm_drops > 0 && per_flow[1] + aqm_drops == 100,
            "the not-ECT flow dropped, not marked"
        );
        let flagged = log
            .iter()
            .filter(|r| r.3 == Event::Departure as u8 && r.5 & flag::CE_MARKED != 0)
            .count();
        assert_eq!(flagged, ce, "one ce_marked departure per CE packet delivered");
        assert_eq!(stats[0].marks, ce as u64);
        assert_eq!(stats[0].drops_aqm, aqm_drops);
    }

    /// An unlimited queue at 1 Mbit/s offered 10 packets at once, with room for 4 (bytes
    /// plus `PACKET_OVERHEAD` each): 6 refused (reason 14, unintended), the 4 delivered;
    /// once they have left, a later packet is accepted again.
    #[test]
    fn the_memory_limit_refuses_arrivals_until_packets_leave() {
        let limit = 4 * held(28);
        let directions = r#"[{"name": "ab", "seed": 1, "spec": {"rate": {"constant": {"bits_per_sec": 1000000}}}}]"#;
        let mut packets: Vec<_> = (0..10).map(|_| (udp_packet(), T0)).collect();
        packets.push((udp_packet(), T0 + 10 * MS));
        let (log, stats, received) = run_config_with(
            "memory",
            &format!(r#""memory_limit_bytes": {limit},"#),
            directions,
            "",
            &packets,
        );
        let refused: Vec<u64> = log
            .iter()
            .filter(|r| r.3 == Event::Drop as u8)
            .map(|r| {
                assert_eq!((r.2, r.4), (NO_DIRECTION, reason::MEMORY_LIMIT));
                r.1
            })
            .collect();
        assert_eq!(refused, (4..10).collect::<Vec<u64>>());
        assert_eq!(received.len(), 5 * 28, "the first four and the late one");
        assert_eq!(stats[0].departures, 5);
    }

    /// Hosts whose every hand-over takes `write_ns` of real time (the clock is moved by
    /// the test and by each write).
    struct SlowHosts {
        now: std::cell::Cell<Nanos>,
        write_ns: Nanos,
    }

    impl Hosts for SlowHosts {
        fn deliver(&mut self, _host: usize, _packet: &[u8]) -> Option<Nanos> {
            let start = self.now.get();
            self.now.set(start + self.write_ns);
            Some(start)
        }

        fn now(&self) -> Nanos {
            self.now.get()
        }
    }

    /// Four packets due at one instant, handed over 20 µs late and 3 µs apart, then one
    /// due alone, 7 µs late: the burst's first is 20 µs late and the other three are on
    /// time (each starts as the one before it ends), their 23 / 26 / 29 µs behind it go to
    /// `burst_wait`; the lone packet is 7 µs late, whatever the burst before it.
    #[test]
    fn a_burst_due_at_one_instant_is_late_only_by_its_first_hand_over() {
        let dir = std::env::temp_dir().join(format!("tlab-fwd-burst-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let cfg = Config::parse(&format!(
            r#"{{"log_path": "unused", "stats_path": "unused",
                "hosts": [{{"name": "a", "tun_fd": 100}}, {{"name": "b", "tun_fd": 101}}],
                "directions": [{{"name": "d", "seed": 1, "spec": {{"delay": {MS}}}}}],
                "routes": [{{"ingress": 0, "dst": "10.0.0.2", "directions": [0], "egress": 1}}]}}"#
        ))
        .unwrap();
        let hosts = SlowHosts {
            now: std::cell::Cell::new(T0),
            write_ns: 3_000,
        };
        let log = PacketLog::create(&dir.join("packets.tlog")).unwrap();
        let mut fwd = Forwarder::new(&cfg, hosts, log).unwrap();
        for _ in 0..4 {
            fwd.ingress(0, &udp_packet(), T0);
        }
        fwd.hosts_mut().now.set(T0 + MS + 20_000);
        fwd.run_due(T0 + MS + 20_000);
        fwd.ingress(0, &udp_packet(), T0 + 5 * MS);
        fwd.hosts_mut().now.set(T0 + 6 * MS + 7_000);
        fwd.run_due(T0 + 6 * MS + 7_000);
        let (late, wait) = (fwd.lateness.summary(), fwd.burst_wait.summary());
        assert_eq!((late.count, late.max_us, late.mean_us), (5, 20.0, 27.0 / 5.0));
        assert_eq!((wait.count, wait.max_us, wait.mean_us), (3, 29.0, 26.0));
        fwd.close_outputs().unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
