//! `tlab-engine CONFIG.json`: the real-time driver of the link model. Started by the
//! Python side with the hosts' TUN descriptors inherited; prints `READY` once it is
//! forwarding; stops on SIGINT/SIGTERM (or when its parent dies), then writes its
//! statistics. See docs/architecture.md (Layers).

mod clock;
mod forwarder;
mod log;
mod stats;
mod sys;

use std::io::Write;
use std::path::PathBuf;

// The configuration parser lives in the library, so tests parse configs with it too.
use engine::config::{self, Config};
use forwarder::Forwarder;
use stats::RunStats;

const TOKEN_TIMER: u64 = u64::MAX;
const TOKEN_SIGNAL: u64 = u64::MAX - 1;
/// Large enough for any packet a TUN device hands over (its MTU may be raised to 64 KiB).
const MAX_PACKET: usize = 65_536;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 2 {
        eprintln!("usage: tlab-engine CONFIG.json");
        std::process::exit(2);
    }
    let cfg = match Config::load(&PathBuf::from(&args[1])) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("tlab-engine: config error: {e}");
            std::process::exit(2);
        }
    };
    if let Err(e) = run(cfg) {
        eprintln!("tlab-engine: {e}");
        std::process::exit(1);
    }
}

fn run(cfg: Config) -> Result<(), String> {
    // Signals are blocked before any thread starts, so every thread inherits the mask
    // and SIGTERM only ever arrives through the signalfd.
    let sigfd = sys::stop_signals().map_err(|e| format!("signalfd: {e}"))?;
    sys::die_with_parent();
    clock::minimise_timer_slack();
    let started = clock::now_ns();
    let log = log::PacketLog::create(&cfg.log_path).map_err(|e| format!("{}: {e}", cfg.log_path.display()))?;
    let mut fwd = Forwarder::new(&cfg, log)?;
    // After the log thread exists, so only the forwarding thread runs real-time.
    if let Some(prio) = cfg.realtime_priority {
        sys::set_realtime(prio).map_err(|e| format!("realtime_priority {prio}: {e}"))?;
    }

    let epoll = sys::Epoll::new().map_err(|e| format!("epoll: {e}"))?;
    for (i, &fd) in fwd.tun_fds().iter().enumerate() {
        sys::set_nonblocking(fd).map_err(|e| format!("hosts[{i}] ({}): tun fd {fd}: {e}", cfg.hosts[i].name))?;
        epoll.add(fd, i as u64).map_err(|e| format!("hosts[{i}]: epoll: {e}"))?;
    }
    let timer = sys::Timer::new().map_err(|e| format!("timerfd: {e}"))?;
    epoll.add(timer.fd, TOKEN_TIMER).map_err(|e| format!("epoll: {e}"))?;
    epoll.add(sigfd, TOKEN_SIGNAL).map_err(|e| format!("epoll: {e}"))?;

    println!("READY");
    let _ = std::io::stdout().flush();

    let mut events = Vec::with_capacity(64);
    let mut buf = vec![0u8; MAX_PACKET];
    let n_hosts = fwd.tun_fds().len();
    let mut readable = vec![true; n_hosts];
    'main: loop {
        fwd.run_due(clock::now_ns());
        // Read in rounds of at most `read_batch` per host until every TUN is drained.
        while readable.iter().any(|&r| r) {
            for (host, host_readable) in readable.iter_mut().enumerate() {
                if !*host_readable {
                    continue;
                }
                let fd = fwd.tun_fds()[host];
                let mut got = 0;
                while got < cfg.read_batch {
                    match sys::read(fd, &mut buf) {
                        Ok(sys::Io::Done(n)) if n > 0 => {
                            fwd.ingress(host, &buf[..n], clock::now_ns());
                            got += 1;
                        }
                        Ok(_) => {
                            *host_readable = false;
                            break;
                        }
                        Err(e) => return Err(format!("hosts[{host}] ({}): read: {e}", cfg.hosts[host].name)),
                    }
                }
            }
        }

        // Sleep until the next due packet or the next arrival; the last `spin_ns` before
        // a due time are spent polling, because the kernel's wake-up is late by tens of
        // microseconds.
        let now = clock::now_ns();
        let timeout_ms = match fwd.next_due() {
            Some(due) if due <= now => 0,
            Some(due) if due - now <= cfg.spin_ns => 0,
            Some(due) => {
                timer.arm_at(due - cfg.spin_ns).map_err(|e| format!("timerfd: {e}"))?;
                -1
            }
            None => {
                timer.arm_at(0).map_err(|e| format!("timerfd: {e}"))?;
                -1
            }
        };
        let n = epoll
            .wait(&mut events, timeout_ms)
            .map_err(|e| format!("epoll_wait: {e}"))?;
        for ev in &events[..n] {
            match ev.u64 {
                TOKEN_TIMER => timer.clear(),
                TOKEN_SIGNAL => break 'main,
                host => readable[host as usize] = true,
            }
        }
    }

    let unintended_total = fwd.unintended.total();
    let lateness = fwd.lateness.summary();
    let (directions, unintended, packets_in, packets_out) = (
        fwd.take_direction_stats(),
        std::mem::take(&mut fwd.unintended),
        fwd.packets_in,
        fwd.packets_out,
    );
    let log_error = fwd.close_log().err().map(|e| e.to_string());
    let stats = RunStats {
        directions,
        unintended_drops: unintended,
        unintended_drops_total: unintended_total,
        packets_in,
        packets_out,
        handover_lateness: lateness,
        wall_s: (clock::now_ns() - started) as f64 * 1e-9,
        cpu_s: clock::cpu_time_s(),
        log_error: log_error.clone(),
    };
    let json = serde_json::to_string_pretty(&stats).expect("stats serialise");
    std::fs::write(&cfg.stats_path, json).map_err(|e| format!("{}: {e}", cfg.stats_path.display()))?;
    match log_error {
        Some(e) => Err(format!("{}: {e}", cfg.log_path.display())),
        None => Ok(()),
    }
}
