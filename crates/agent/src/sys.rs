//! Thin wrappers over the OS: CLOCK_MONOTONIC, absolute-deadline sleeps, the stop flag set
//! by SIGTERM/SIGINT, and socket options that std does not expose.

use std::io;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};

/// Current CLOCK_MONOTONIC time in nanoseconds. All namespaces of the machine share this
/// clock, so timestamps taken by different agents are directly comparable.
#[inline]
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: valid pointer to a timespec; CLOCK_MONOTONIC always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Sleeps until CLOCK_MONOTONIC reaches `deadline_ns` (absolute, so no drift accumulates).
/// Returns early (without error) if the stop flag is raised; long sleeps are cut into
/// slices of at most 100 ms to notice it.
pub fn sleep_until(deadline_ns: u64) {
    loop {
        if stop_requested() {
            return;
        }
        let now = now_ns();
        if now >= deadline_ns {
            return;
        }
        let target = deadline_ns.min(now + 100_000_000);
        let ts = libc::timespec {
            tv_sec: (target / 1_000_000_000) as libc::time_t,
            tv_nsec: (target % 1_000_000_000) as libc::c_long,
        };
        // SAFETY: valid timespec; remaining time is not needed with TIMER_ABSTIME.
        unsafe { libc::clock_nanosleep(libc::CLOCK_MONOTONIC, libc::TIMER_ABSTIME, &ts, std::ptr::null_mut()) };
    }
}

/// Lowers this thread's timer slack to 1 ns so absolute-deadline sleeps wake up on time
/// (default slack is 50 µs). Threads created afterwards inherit it.
pub fn set_min_timer_slack() {
    // SAFETY: PR_SET_TIMERSLACK takes an unsigned long; no pointers involved.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
}

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_sig: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
}

/// Installs SIGTERM and SIGINT handlers that raise the stop flag. Every loop polls
/// [`stop_requested`] at least every 100 ms (sockets get 100 ms timeouts) and then writes
/// its summary and exits normally.
pub fn install_stop_handlers() {
    for sig in [libc::SIGTERM, libc::SIGINT] {
        // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as *const () as libc::sighandler_t;
            sa.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}

#[inline]
pub fn stop_requested() -> bool {
    STOP.load(Ordering::Relaxed)
}

/// Raises the stop flag from inside the program (used by threads that finish a run).
pub fn request_stop() {
    STOP.store(true, Ordering::SeqCst);
}

/// `setsockopt(2)` with `value` as the option's bytes.
pub fn setsockopt_raw(fd: &impl AsRawFd, level: libc::c_int, name: libc::c_int, value: &[u8]) -> io::Result<()> {
    // SAFETY: value points to value.len() readable bytes.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            level,
            name,
            value.as_ptr() as *const libc::c_void,
            value.len() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Sets TCP_CONGESTION by name. The error names the algorithm and lists what the kernel
/// has available, since the most common cause is a module that is not loaded or not allowed.
pub fn set_congestion(fd: &impl AsRawFd, cc: &str) -> anyhow::Result<()> {
    let bytes = cc.as_bytes();
    if let Err(e) = setsockopt_raw(fd, libc::IPPROTO_TCP, libc::TCP_CONGESTION, bytes) {
        let avail = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control")
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|_| "unknown".into());
        let allowed = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_allowed_congestion_control")
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|_| "unknown".into());
        anyhow::bail!(
            "kernel refused congestion control '{cc}': {e} (available: {avail}; allowed for non-root: {allowed})"
        );
    }
    Ok(())
}

/// Reads TCP_CONGESTION back (the name the kernel actually uses for this socket).
pub fn get_congestion(fd: &impl AsRawFd) -> Option<String> {
    let mut buf = [0u8; 32];
    let mut len = buf.len() as libc::socklen_t;
    // SAFETY: buf is writable for len bytes; len is updated by the kernel.
    let rc = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            buf.as_mut_ptr() as *mut libc::c_void,
            &mut len,
        )
    };
    if rc != 0 {
        return None;
    }
    let s = &buf[..len as usize];
    let end = s.iter().position(|&b| b == 0).unwrap_or(s.len());
    Some(String::from_utf8_lossy(&s[..end]).into_owned())
}

/// Sets TCP_MAXSEG (must be called before connect to affect the SYN's MSS option).
pub fn set_mss(fd: &impl AsRawFd, mss: u32) -> io::Result<()> {
    let v = mss as libc::c_int;
    setsockopt_raw(fd, libc::IPPROTO_TCP, libc::TCP_MAXSEG, &v.to_ne_bytes())
}

fn getsockopt_int(fd: &impl AsRawFd, level: libc::c_int, name: libc::c_int) -> io::Result<i32> {
    let mut v: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: v is a writable c_int and len its size.
    let rc = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            level,
            name,
            &mut v as *mut libc::c_int as *mut libc::c_void,
            &mut len,
        )
    };
    if rc == 0 {
        Ok(v)
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Asks for a receive buffer of `bytes` (SO_RCVBUFFORCE, which ignores rmem_max when we
/// have CAP_NET_ADMIN, else SO_RCVBUF capped by rmem_max). Returns the kernel's value
/// (which counts bookkeeping overhead, i.e. about twice the request).
pub fn set_rcvbuf(fd: &impl AsRawFd, bytes: u64) -> io::Result<u64> {
    let v = bytes.min(i32::MAX as u64 / 2) as libc::c_int;
    if setsockopt_raw(fd, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, &v.to_ne_bytes()).is_err() {
        setsockopt_raw(fd, libc::SOL_SOCKET, libc::SO_RCVBUF, &v.to_ne_bytes())?;
    }
    Ok(getsockopt_int(fd, libc::SOL_SOCKET, libc::SO_RCVBUF)? as u64)
}

/// Asks for a send buffer of `bytes` (SO_SNDBUFFORCE, else SO_SNDBUF capped by wmem_max).
/// Returns the kernel's value (≈ twice the request).
pub fn set_sndbuf(fd: &impl AsRawFd, bytes: u64) -> io::Result<u64> {
    let v = bytes.min(i32::MAX as u64 / 2) as libc::c_int;
    if setsockopt_raw(fd, libc::SOL_SOCKET, libc::SO_SNDBUFFORCE, &v.to_ne_bytes()).is_err() {
        setsockopt_raw(fd, libc::SOL_SOCKET, libc::SO_SNDBUF, &v.to_ne_bytes())?;
    }
    Ok(getsockopt_int(fd, libc::SOL_SOCKET, libc::SO_SNDBUF)? as u64)
}

/// User and system CPU seconds this process has used so far (all threads).
pub fn cpu_times_s() -> (f64, f64) {
    // SAFETY: ru is plain data written by getrusage.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let s = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    (s(ru.ru_utime), s(ru.ru_stime))
}

/// CPU time of this process so far (getrusage), flattened into the `results` of every
/// agent that reports it (tcp, quic and udp, both ends): `cpu_user_s`, `cpu_sys_s`.
#[derive(serde::Serialize)]
pub struct Cpu {
    pub cpu_user_s: f64,
    pub cpu_sys_s: f64,
}

impl Cpu {
    pub fn now() -> Cpu {
        let (cpu_user_s, cpu_sys_s) = cpu_times_s();
        Cpu { cpu_user_s, cpu_sys_s }
    }
}

/// Datagrams the kernel dropped on this UDP socket (receive buffer full), from the `drops`
/// column of /proc/self/net/udp{,6} (this namespace's table), matched by socket inode.
pub fn udp_socket_drops(fd: &impl AsRawFd) -> Option<u64> {
    // SAFETY: st is plain data written by fstat.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } != 0 {
        return None;
    }
    let inode = st.st_ino.to_string();
    for table in ["/proc/self/net/udp", "/proc/self/net/udp6"] {
        let Ok(text) = std::fs::read_to_string(table) else {
            continue;
        };
        for line in text.lines().skip(1) {
            let cols: Vec<&str> = line.split_whitespace().collect();
            if cols.len() >= 13 && cols[9] == inode {
                return cols[cols.len() - 1].parse().ok();
            }
        }
    }
    None
}

/// A socket call that timed out (the periodic wake-up to check for a stop request) or
/// was interrupted: try again.
pub fn is_retry(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
    )
}

/// Runs the socket call `op` until it completes, again after each [`is_retry`] error;
/// None if a stop was requested first.
pub fn until_stopped<T>(mut op: impl FnMut() -> io::Result<T>) -> io::Result<Option<T>> {
    loop {
        if stop_requested() {
            return Ok(None);
        }
        match op() {
            Ok(v) => return Ok(Some(v)),
            Err(e) if is_retry(&e) => continue,
            Err(e) => return Err(e),
        }
    }
}
