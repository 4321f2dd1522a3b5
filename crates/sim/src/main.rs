//! `tlab-sim CONFIG.json`: runs one scenario run in virtual time (docs/simulator.md).
//! The network is the engine's forwarder and link model; the endpoints are sans-IO
//! stacks (quinn-proto for QUIC) and the agent's UDP and probe workloads. Writes the
//! packet log, the engine statistics and the agents' summaries where an emulated run
//! has them, and `raw/t0_ns`, `raw/t_end_ns`; prints one JSON line of its own statistics.

mod config;
mod datagram;
mod endpoint;
mod world;

use std::cell::Cell;
use std::net::Ipv4Addr;
use std::rc::Rc;
use std::time::Instant;

use agent::cc::CcChoice;
use engine::config::Config;
use engine::forwarder::{Forwarder, VirtualHosts};
use engine::log::PacketLog;
use engine::stats::{Lateness, RunStats};

use config::SimConfig;
use datagram::at;
use endpoint::bulk::TcpSetup;
use endpoint::pacer::Schedule;
use endpoint::probe::{Echo, Probe};
use endpoint::quic::{Clock, Plan, QuicClient, QuicServer, QuicSetup};
use endpoint::tcp::{TcpClient, TcpServer};
use endpoint::transportlab_tcp::{TcpClient as LabTcpClient, TcpServer as LabTcpServer};
use endpoint::udp::{UdpReceiver, UdpSender};
use endpoint::Delivered;
use world::World;

/// Client ports: flows from 40000, probes from 50000, one each (ephemeral in a kernel).
const FLOW_CLIENT_PORT: u16 = 40_000;
const PROBE_CLIENT_PORT: u16 = 50_000;

fn main() {
    engine::cli::main_with_config("tlab-sim", SimConfig::load, run);
}

/// The process's peak resident set (VmHWM), in MiB; None where /proc does not say.
fn max_rss_mb() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

fn addr(cfg: &SimConfig, host: usize) -> Ipv4Addr {
    cfg.addresses[host]
}

fn build(cfg: &SimConfig, world: &mut World) -> Result<(), String> {
    let clock = Clock::new();
    for (i, f) in cfg.flows.iter().enumerate() {
        let client = at(addr(cfg, f.client), FLOW_CLIENT_PORT + i as u16);
        let server = at(addr(cfg, f.server), f.port);
        let (start, end) = (cfg.t0_ns + f.start_ns, cfg.t0_ns + f.end_ns);
        let name = |e: String| format!("flows[{i}] ({}): {e}", f.name);
        match f.protocol.as_str() {
            "quic" => {
                let params: Vec<(String, String)> = f.cc_params.clone().into_iter().collect();
                let cc = f.cc.as_deref().unwrap_or("cubic");
                let delivered = Rc::new(Cell::new(Delivered::default()));
                let setup = || -> Result<QuicSetup, String> {
                    Ok(QuicSetup {
                        name: f.name.clone(),
                        cc: CcChoice::parse(cc, &params)?,
                        datagram_size: f.size.map(|s| s as u16),
                        seed: cfg.seed.wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(i as u64),
                        clock,
                        delivered: delivered.clone(),
                        raw: cfg.raw_dir.clone(),
                        qlog: f.qlog,
                    })
                };
                let server_end = QuicServer::new(setup().map_err(name)?, server, start).map_err(name)?;
                world.add(Box::new(server_end), false).map_err(name)?;
                let upload = f.direction == "upload";
                let messages = f.message_size.zip(f.interval_ns);
                let plan = Plan {
                    start,
                    end,
                    upload,
                    bytes: f.bytes,
                    messages,
                    streams: f.streams,
                    objects: f.objects.zip(f.object_size),
                };
                let client_end = QuicClient::new(setup().map_err(name)?, client, server, plan).map_err(name)?;
                world.add(Box::new(client_end), true).map_err(name)?;
            }
            "tcp" => {
                let delivered = Rc::new(Cell::new(Delivered::default()));
                let upload = f.direction == "upload";
                // The receiving host's tcp_rmem and the sending host's send-buffer limit
                // (each end gets both; only the receiver's and the sender's matter).
                let (rmem, sndbuf) = (f.rmem, f.sndbuf);
                let setup = || TcpSetup {
                    name: f.name.clone(),
                    cc: f.cc.clone().unwrap_or_else(|| "cubic".into()),
                    seed: cfg.seed.wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(i as u64),
                    mss: f.size.map(|s| s as u16),
                    rmem,
                    sndbuf,
                    delivered: delivered.clone(),
                    raw: cfg.raw_dir.clone(),
                };
                if f.stack.as_deref() == Some("smoltcp") {
                    let server_end = TcpServer::new(setup(), server, start).map_err(name)?;
                    world.add(Box::new(server_end), false).map_err(name)?;
                    let client_end =
                        TcpClient::new(setup(), client, server, start, end, upload, f.bytes).map_err(name)?;
                    world.add(Box::new(client_end), true).map_err(name)?;
                } else {
                    let server_end = LabTcpServer::new(setup(), server, client, start).map_err(name)?;
                    world.add(Box::new(server_end), false).map_err(name)?;
                    let client_end =
                        LabTcpClient::new(setup(), client, server, start, end, upload, f.bytes).map_err(name)?;
                    world.add(Box::new(client_end), true).map_err(name)?;
                }
            }
            "udp" => {
                let size = f
                    .size
                    .ok_or_else(|| name("a udp flow needs its datagram size".into()))?;
                let interval = f
                    .interval_ns
                    .ok_or_else(|| name("a udp flow needs its interval".into()))?;
                world
                    .add(Box::new(UdpReceiver::new(&f.name, server, start)), false)
                    .map_err(name)?;
                let schedule = Schedule {
                    size,
                    interval,
                    burst: f.burst,
                    count: f.count,
                };
                let sender = UdpSender::new(&f.name, client, server, schedule, start, end);
                world.add(Box::new(sender), true).map_err(name)?;
            }
            other => return Err(name(format!("protocol {other:?} is not simulated"))),
        }
    }
    for (i, p) in cfg.probes.iter().enumerate() {
        let client = at(addr(cfg, p.client), PROBE_CLIENT_PORT + i as u16);
        let server = at(addr(cfg, p.server), p.port);
        let name = |e: String| format!("probes[{i}] ({}): {e}", p.name);
        world.add(Box::new(Echo::new(server)), false).map_err(name)?;
        let schedule = Schedule {
            size: p.size,
            interval: p.interval_ns,
            burst: 1,
            count: p.count,
        };
        let probe = Probe::new(
            &p.name,
            client,
            server,
            schedule,
            cfg.t0_ns + p.start_ns,
            cfg.t0_ns + p.end_ns,
            p.timeout_ns,
        );
        world.add(Box::new(probe), false).map_err(name)?;
    }
    Ok(())
}

fn run(cfg: SimConfig) -> Result<(), String> {
    let wall = Instant::now();
    let net = Config::parse(&cfg.network.to_string()).map_err(|e| format!("network: {e}"))?;
    if net.hosts.len() != cfg.addresses.len() {
        return Err(format!(
            "{} hosts but {} addresses",
            net.hosts.len(),
            cfg.addresses.len()
        ));
    }
    let log = PacketLog::create(&net.log_path).map_err(|e| format!("{}: {e}", net.log_path.display()))?;
    let mut fwd = Forwarder::new(&net, VirtualHosts::default(), log)?;
    // Trace time 0 is the scenario's time 0, as in the engine.
    fwd.set_origin(cfg.t0_ns);
    let mut world = World::new(fwd, &cfg.addresses);
    build(&cfg, &mut world)?;
    let end = world.run(cfg.t0_ns, cfg.t0_ns + cfg.duration_ns, cfg.stop_when_flows_done)?;
    let (events, unclaimed) = (world.events, world.unclaimed);
    let mut fwd = world.finish(&cfg.raw_dir, end)?;
    let stats = RunStats {
        unintended_drops_total: fwd.unintended.total(),
        handover_lateness: fwd.lateness.summary(),
        burst_wait: fwd.burst_wait.summary(),
        arrival_shift: fwd.arrival_shift.summary(),
        directions: fwd.take_direction_stats(),
        unintended_drops: std::mem::take(&mut fwd.unintended),
        packets_in: fwd.packets_in,
        packets_out: fwd.packets_out,
        timer_calibration: None,
        timer_lateness: Lateness::default().summary(),
        spin_final_us: 0.0,
        read_delay: Lateness::default().summary(),
        attach: vec!["simulated".into(); net.hosts.len()],
        stamps_at_ring_write: 0,
        spin_s: 0.0,
        spin_budget_exhausted: 0,
        realtime_yields: 0,
        wall_s: wall.elapsed().as_secs_f64(),
        cpu_s: wall.elapsed().as_secs_f64(),
        egress_retries: 0,
        warm_frames: 0,
        egress_error: None,
        log_error: None,
    };
    let packets = stats.packets_in;
    fwd.close_outputs()?;
    let json = serde_json::to_string_pretty(&stats).expect("stats serialise");
    std::fs::write(&net.stats_path, json).map_err(|e| format!("{}: {e}", net.stats_path.display()))?;
    for (file, t) in [("t0_ns", cfg.t0_ns), ("t_end_ns", end)] {
        let path = cfg.raw_dir.join(file);
        std::fs::write(&path, t.to_string()).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    let wall_s = wall.elapsed().as_secs_f64();
    println!(
        "{}",
        serde_json::json!({
            "simulated_s": (end - cfg.t0_ns) as f64 / 1e9,
            "wall_s": wall_s,
            "events": events,
            "packets": packets,
            "unclaimed_datagrams": unclaimed,
            "speedup": (end - cfg.t0_ns) as f64 / 1e9 / wall_s,
            "max_rss_mb": max_rss_mb(),
        })
    );
    Ok(())
}
