//! `tlab-engine CONFIG.json`: the real-time driver of the link model. Started by the
//! Python side with the hosts' TUN descriptors inherited or their veth ends in its
//! namespace; prints `READY` once it is
//! forwarding; stops on SIGINT/SIGTERM (or when its parent dies), then writes its
//! statistics. See docs/architecture.md (Layers).

mod attach;
mod clock;
mod sys;

use std::io::Write;

use attach::{Egress, RxRing};
use engine::config::{Attach, Config};
use engine::control::{Command, Control};
use engine::forwarder::{Forwarder, Hosts};
use engine::spin::{self, Spin};
use engine::stats::{Calibration, Lateness, RunStats};
use engine::{capture, log};
use linkem::Nanos;

const TOKEN_TIMER: u64 = u64::MAX;
/// Busy time per second after which the forwarding thread stops spinning, and after which
/// it leaves real-time scheduling for the rest of the second (see the loop).
const SPIN_BUSY_CAP_NS: u64 = 700_000_000;
const RT_BUSY_CAP_NS: u64 = 850_000_000;
const TOKEN_SIGNAL: u64 = u64::MAX - 1;
/// A warm-up frame is not sent when a packet is due within the spin plus this.
const WARM_CLEARANCE_NS: u64 = 300_000;
const TOKEN_CONTROL: u64 = u64::MAX - 2;
/// Large enough for any packet a TUN device hands over (its MTU may be raised to 64 KiB).
const MAX_PACKET: usize = 65_536;

fn main() {
    engine::cli::main_with_config("tlab-engine", Config::load, run);
}

/// The hosts as the real-time engine reaches them: their TUN devices or veth ends, and
/// CLOCK_MONOTONIC.
struct RealHosts {
    egress: Vec<Egress>,
    /// Hand-overs retried because the host could not take the packet at once.
    retries: u64,
    /// The first hand-over error that was not retried away (for the statistics).
    last_error: Option<String>,
}

/// How long a host that cannot take a packet (its socket's send buffer or the receiving
/// CPU's backlog full: `EAGAIN`/`ENOBUFS`) is retried before the packet counts as an
/// unintended drop. A link does not lose a packet because the next hop is busy; the
/// wait shows as hand-over lateness.
const EGRESS_RETRY_NS: u64 = 5_000_000;

impl Hosts for RealHosts {
    fn deliver(&mut self, host: usize, packet: &[u8]) -> Option<Nanos> {
        let first = clock::now_ns();
        let mut attempt = first;
        loop {
            match self.egress[host].send(packet) {
                Ok(()) => return Some(attempt),
                Err(e)
                    if matches!(e.raw_os_error(), Some(libc::EAGAIN | libc::ENOBUFS))
                        && attempt - first < EGRESS_RETRY_NS =>
                {
                    self.retries += 1;
                    std::hint::spin_loop();
                    attempt = clock::now_ns();
                }
                Err(e) => {
                    self.last_error.get_or_insert_with(|| format!("hosts[{host}]: {e}"));
                    return None;
                }
            }
        }
    }

    fn now(&self) -> Nanos {
        clock::now_ns()
    }
}

fn run(cfg: Config) -> Result<(), String> {
    // Signals are blocked before any thread starts, so every thread inherits the mask
    // and SIGTERM only ever arrives through the signalfd.
    let sigfd = sys::stop_signals().map_err(|e| format!("signalfd: {e}"))?;
    sys::die_with_parent();
    clock::minimise_timer_slack();
    let started = clock::now_ns();
    // Before any socket exists: the veth ends live in the engine's own namespace.
    if let Some(ns) = &cfg.netns {
        attach::enter_netns(ns).map_err(|e| format!("netns {ns}: {e}"))?;
    }
    let mut rings: Vec<Option<RxRing>> = Vec::new();
    let mut egress = Vec::new();
    for (i, h) in cfg.hosts.iter().enumerate() {
        match &h.attach {
            Attach::Tun { fd } => {
                sys::set_nonblocking(*fd).map_err(|e| format!("hosts[{i}] ({}): tun fd {fd}: {e}", h.name))?;
                rings.push(None);
                egress.push(Egress::Tun { fd: *fd });
            }
            Attach::Veth { ifname, mac, peer_mac } => {
                let (ring, eg) = attach::open_veth(ifname, *mac, *peer_mac)
                    .map_err(|e| format!("hosts[{i}] ({}): {ifname}: {e}", h.name))?;
                rings.push(Some(ring));
                egress.push(eg);
            }
            Attach::Simulated => {
                return Err(format!(
                    "hosts[{i}] ({}): a simulated host (tlab-sim runs those; tlab-engine needs a TUN or veth)",
                    h.name
                ))
            }
        }
    }
    let log = log::PacketLog::create(&cfg.log_path).map_err(|e| format!("{}: {e}", cfg.log_path.display()))?;
    let mut fwd = Forwarder::new(
        &cfg,
        RealHosts {
            egress,
            retries: 0,
            last_error: None,
        },
        log,
    )?;
    if let Some(c) = &cfg.capture {
        let captured: Vec<(usize, String)> = c
            .directions
            .iter()
            .map(|&d| (d, cfg.directions[d].name.clone()))
            .collect();
        let mono_to_real = clock::real_ns() as i64 - clock::now_ns() as i64;
        let capture = capture::Capture::create(&c.path, c.snaplen, &captured, cfg.log_directions(), mono_to_real)
            .map_err(|e| format!("capture.path {}: {e}", c.path.display()))?;
        fwd.set_capture(capture);
    }
    // After the log thread exists, so only the forwarding thread runs real-time.
    if let Some(prio) = cfg.realtime_priority {
        sys::set_realtime(prio).map_err(|e| format!("realtime_priority {prio}: {e}"))?;
    }
    if let Some(cpu) = cfg.cpu {
        sys::pin_to_cpu(cpu).map_err(|e| format!("cpu {cpu}: {e}"))?;
    }

    let epoll = sys::Epoll::new().map_err(|e| format!("epoll: {e}"))?;
    for (i, h) in cfg.hosts.iter().enumerate() {
        let fd = match (&h.attach, &rings[i]) {
            (_, Some(r)) => r.fd,
            (Attach::Tun { fd }, None) => *fd,
            _ => unreachable!(),
        };
        epoll.add(fd, i as u64).map_err(|e| format!("hosts[{i}]: epoll: {e}"))?;
    }
    let timer = sys::Timer::new().map_err(|e| format!("timerfd: {e}"))?;
    epoll.add(timer.fd, TOKEN_TIMER).map_err(|e| format!("epoll: {e}"))?;

    // The engine's own timer lateness, measured the way the loop below sleeps.
    let calibration = if cfg.calibrate_spin {
        Some(calibrate(&epoll, &timer, cfg.spin_ns)?)
    } else {
        None
    };
    let mut spin = Spin::new(calibration.as_ref().map_or(cfg.spin_ns, |c| c.spin_ns));
    // Timer wake-ups while forwarding: how late each came, and the spin they set.
    let mut timer_lateness = Lateness::default();
    let mut armed_for: Option<Nanos> = None;
    epoll.add(sigfd, TOKEN_SIGNAL).map_err(|e| format!("epoll: {e}"))?;
    // Until the runner says when the scenario's time 0 is, traces start with the engine.
    fwd.set_origin(started);
    // The control input (`control.rs`): the runner's pipe. A stdin that cannot be watched
    // (a file, /dev/null: the engine started by hand) gives no control, which is said.
    let mut control = match epoll.add(libc::STDIN_FILENO, TOKEN_CONTROL) {
        Ok(()) => Some(Control::default()),
        Err(e) => {
            eprintln!("tlab-engine: no control input on stdin ({e}): trace-driven links start when the engine does");
            None
        }
    };

    println!("READY");
    let _ = std::io::stdout().flush();

    let mut events = Vec::with_capacity(64);
    let mut buf = vec![0u8; MAX_PACKET];
    let n_hosts = cfg.hosts.len();
    let mut readable = vec![true; n_hosts];
    let mut frames: Vec<(attach::Frame, usize)> = Vec::with_capacity(1024);
    let mut offset = attach::real_to_mono_offset();
    let mut offset_at = clock::now_ns();
    let mut read_delay = Lateness::default();
    let mut stamps_at_ring_write = 0u64;
    // A real-time thread busy for more than `kernel.sched_rt_runtime_us` (950 ms) of a
    // second is stopped for the rest of it (docs/architecture.md, "What this machine kind
    // does"): measured at 1 Gbit/s, a 40–50 ms stall each second. So the spin stops for
    // the rest of each second once the thread has spun half of it, or has been busy
    // (spinning or working, i.e. not sleeping) for `SPIN_BUSY_CAP_NS` of it; and once busy
    // for `RT_BUSY_CAP_NS` of a second, the thread runs under normal scheduling for the rest
    // of it. Any second of the kernel's then holds at most that much real-time running.
    let (mut spin_total, mut spin_window, mut window_start, mut exhausted) = (0u64, 0u64, clock::now_ns(), 0u64);
    let mut slept_window = 0u64;
    let (mut realtime, mut rt_yields) = (cfg.realtime_priority.is_some(), 0u64);
    let mut spinning_since: Option<u64> = None;
    let all_rings = rings.iter().all(Option::is_some);
    let mut polled_at = 0u64;
    // Idle hand-over paths kept warm (`Config::warm_interval_ns`): since the last arrival
    // or warm-up, and how many warm-up frames went out.
    let warm_ns = cfg.warm_interval_ns;
    let (mut last_active, mut warm_frames) = (clock::now_ns(), 0u64);
    'main: loop {
        let now = clock::now_ns();
        if now - offset_at > 1_000_000_000 {
            offset = attach::real_to_mono_offset();
            offset_at = now;
        }
        // Rings first: frames stamped before `now` must enter the model before anything
        // due at `now` is processed. All hosts' frames go in by their kernel stamps.
        frames.clear();
        for (host, ring) in rings.iter_mut().enumerate() {
            if let Some(r) = ring {
                r.ready(usize::MAX, offset, host, &mut frames);
            }
        }
        frames.sort_by_key(|(f, _)| f.stamp);
        if !frames.is_empty() {
            last_active = now;
        }
        for (f, host) in &frames {
            let ring = rings[*host].as_ref().expect("a ring");
            let (frame, _) = ring.bytes(f.slot);
            let read_at = clock::now_ns();
            let stamp = f.stamp.min(read_at);
            read_delay.add(read_at - stamp);
            stamps_at_ring_write += u64::from(!f.from_kernel);
            match attach::ip_of_frame(frame) {
                Some(ip) => fwd.ingress(*host, ip, stamp),
                // Not IPv4 (the forwarder logs it as such).
                None => fwd.ingress(*host, &[], stamp),
            }
            ring.release(f.slot);
        }
        // Up to the time the rings were read, not the time now: a frame stamped after the
        // read (still on its way into a ring) must not find the model already past its
        // stamp and be shifted (docs/engine-config.md, `arrival_shift`); what fell due
        // meanwhile goes out at once on the next turn.
        fwd.run_due(now);
        // TUNs: read in rounds of at most `read_batch` per host until every one is drained.
        while readable.iter().any(|&r| r) {
            for (host, host_readable) in readable.iter_mut().enumerate() {
                if !*host_readable {
                    continue;
                }
                let Attach::Tun { fd } = cfg.hosts[host].attach else {
                    *host_readable = false;
                    continue;
                };
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
        // a due time are spent polling, because the kernel's wake-up is late.
        let now = clock::now_ns();
        if now - window_start >= 1_000_000_000 {
            window_start = now;
            spin_window = 0;
            slept_window = 0;
            if let (false, Some(prio)) = (realtime, cfg.realtime_priority) {
                sys::set_realtime(prio).map_err(|e| format!("realtime_priority {prio}: {e}"))?;
                realtime = true;
            }
        }
        if let Some(s) = spinning_since.take() {
            spin_window += now - s;
            spin_total += now - s;
        }
        let busy_window = (now - window_start).saturating_sub(slept_window);
        let budget_left = spin_window < 500_000_000 && busy_window < SPIN_BUSY_CAP_NS;
        if realtime && busy_window >= RT_BUSY_CAP_NS {
            sys::set_normal().map_err(|e| format!("leaving real-time scheduling: {e}"))?;
            realtime = false;
            rt_yields += 1;
        }
        let spin_ns = spin.ns();
        let spin_now = if budget_left { spin_ns } else { 0 };
        if warm_ns > 0
            && now >= last_active + warm_ns
            && fwd.next_due().is_none_or(|due| due > now + spin_ns + WARM_CLEARANCE_NS)
        {
            for host in &fwd.hosts_mut().egress {
                warm_frames += u64::from(host.send_warm());
            }
            last_active = now;
        }
        let warm_at = (warm_ns > 0).then(|| last_active + warm_ns);
        let timeout_ms = match fwd.next_due() {
            Some(due) if due <= now => 0,
            // With every host on a ring the spin polls the rings' status words and the
            // vDSO clock only — no system call — until the due time or an arrival; the
            // descriptors (and the stop signal) are still looked at once a millisecond.
            Some(due) if due - now <= spin_now && all_rings && now - polled_at < 1_000_000 => {
                let mut t = now;
                while t < due && !rings.iter().flatten().any(RxRing::has_frame) {
                    std::hint::spin_loop();
                    t = clock::now_ns();
                }
                spin_window += t - now;
                spin_total += t - now;
                continue 'main;
            }
            Some(due) if due - now <= spin_now => {
                spinning_since = Some(now);
                0
            }
            Some(due) => {
                if !budget_left && due - now <= spin_ns {
                    exhausted += 1;
                }
                let at = warm_at.map_or(due - spin_now, |w| w.min(due - spin_now));
                timer.arm_at(at).map_err(|e| format!("timerfd: {e}"))?;
                armed_for = Some(at);
                -1
            }
            None => {
                timer
                    .arm_at(warm_at.unwrap_or(0))
                    .map_err(|e| format!("timerfd: {e}"))?;
                armed_for = warm_at;
                -1
            }
        };
        let before = clock::now_ns();
        let n = epoll
            .wait(&mut events, timeout_ms)
            .map_err(|e| format!("epoll_wait: {e}"))?;
        polled_at = clock::now_ns();
        if timeout_ms < 0 {
            slept_window += polled_at - before;
        }
        for ev in &events[..n] {
            match ev.u64 {
                TOKEN_TIMER => {
                    timer.clear();
                    // Only a sleep the timer ended measures its wake-up (a poll may find
                    // an old deadline that passed while the thread was busy).
                    if let (true, Some(at)) = (timeout_ms < 0, armed_for.take()) {
                        let late = polled_at.saturating_sub(at);
                        timer_lateness.add(late);
                        spin.woke(late);
                    }
                }
                TOKEN_SIGNAL => break 'main,
                TOKEN_CONTROL => {
                    let Some(c) = control.as_mut() else { continue };
                    match sys::read(libc::STDIN_FILENO, &mut buf) {
                        Ok(sys::Io::Done(n)) if n > 0 => {
                            for cmd in c.feed(&buf[..n]) {
                                match cmd {
                                    Ok(Command::T0(t0)) => {
                                        fwd.set_origin(t0);
                                        println!("T0 {t0}");
                                        let _ = std::io::stdout().flush();
                                    }
                                    Err(e) => eprintln!("tlab-engine: {e}"),
                                }
                            }
                        }
                        Ok(sys::Io::WouldBlock) => {}
                        // End of input: the runner closed it; forwarding goes on.
                        Ok(_) | Err(_) => {
                            let _ = epoll.remove(libc::STDIN_FILENO);
                            control = None;
                        }
                    }
                }
                host => readable[host as usize] = true,
            }
        }
    }

    for r in rings.iter_mut().flatten() {
        r.update_drops();
    }
    fwd.unintended.ring_full = rings.iter().map(|r| r.as_ref().map_or(0, |r| r.drops)).collect();
    let unintended_total = fwd.unintended.total();
    let lateness = fwd.lateness.summary();
    let burst_wait = fwd.burst_wait.summary();
    let arrival_shift = fwd.arrival_shift.summary();
    let (directions, unintended, packets_in, packets_out) = (
        fwd.take_direction_stats(),
        std::mem::take(&mut fwd.unintended),
        fwd.packets_in,
        fwd.packets_out,
    );
    let mut stats = RunStats {
        directions,
        unintended_drops: unintended,
        unintended_drops_total: unintended_total,
        packets_in,
        packets_out,
        handover_lateness: lateness,
        burst_wait,
        arrival_shift,
        timer_calibration: calibration,
        timer_lateness: timer_lateness.summary(),
        spin_final_us: spin.ns() as f64 / 1e3,
        read_delay: read_delay.summary(),
        attach: cfg.hosts.iter().map(|h| h.attach.kind().to_string()).collect(),
        stamps_at_ring_write,
        spin_s: spin_total as f64 * 1e-9,
        spin_budget_exhausted: exhausted,
        realtime_yields: rt_yields,
        wall_s: (clock::now_ns() - started) as f64 * 1e-9,
        cpu_s: clock::cpu_time_s(),
        egress_retries: fwd.hosts_mut().retries,
        warm_frames,
        egress_error: fwd.hosts_mut().last_error.take(),
        log_error: None,
    };
    // The statistics first: flushing a log writer that fell behind can take a while, and
    // what is known by now must not wait for it.
    let write_stats = |stats: &RunStats| {
        let json = serde_json::to_string_pretty(stats).expect("stats serialise");
        std::fs::write(&cfg.stats_path, json).map_err(|e| format!("{}: {e}", cfg.stats_path.display()))
    };
    write_stats(&stats)?;
    if let Err(e) = fwd.close_outputs() {
        stats.log_error = Some(e.clone());
        write_stats(&stats)?;
        return Err(e);
    }
    Ok(())
}

/// Sleeps to 300 absolute deadlines 200 µs apart through the timerfd and epoll, as the
/// forwarding loop does, and returns the lateness percentiles and the spin chosen:
/// max(`configured`, the largest lateness seen + margin), at most `spin::MAX_NS`: the
/// spin's floor for the run, which raises it to its own wake-ups' lateness (`spin.rs`).
fn calibrate(epoll: &sys::Epoll, timer: &sys::Timer, configured: u64) -> Result<Calibration, String> {
    let mut l = Lateness::default();
    let mut events = Vec::with_capacity(4);
    for _ in 0..300 {
        let due = clock::now_ns() + 200_000;
        timer.arm_at(due).map_err(|e| format!("timerfd: {e}"))?;
        loop {
            let n = epoll.wait(&mut events, -1).map_err(|e| format!("epoll_wait: {e}"))?;
            if events[..n].iter().any(|e| e.u64 == TOKEN_TIMER) {
                break;
            }
        }
        l.add(clock::now_ns().saturating_sub(due));
        timer.clear();
    }
    let s = l.summary();
    let max_ns = (s.max_us * 1000.0) as u64;
    Ok(Calibration {
        samples: s.count,
        p50_us: s.p50_us,
        p99_us: s.p99_us,
        max_us: s.max_us,
        spin_ns: configured.max((max_ns + spin::MARGIN_NS).min(spin::MAX_NS)),
    })
}
