//! Thin wrappers over the Linux calls the engine waits and moves packets with: epoll,
//! an absolute CLOCK_MONOTONIC timerfd, a signalfd for SIGINT/SIGTERM, and non-blocking
//! reads and writes on inherited TUN descriptors.

use std::io;
use std::os::fd::RawFd;

fn check(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

pub fn set_nonblocking(fd: RawFd) -> io::Result<()> {
    // SAFETY: fcntl on a descriptor we were handed; failure is reported.
    let flags = check(unsafe { libc::fcntl(fd, libc::F_GETFL) })?;
    check(unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) })?;
    Ok(())
}

pub enum Io {
    Done(usize),
    WouldBlock,
}

pub fn read(fd: RawFd, buf: &mut [u8]) -> io::Result<Io> {
    // SAFETY: buf is valid for buf.len() bytes.
    let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
    if n >= 0 {
        return Ok(Io::Done(n as usize));
    }
    let e = io::Error::last_os_error();
    match e.kind() {
        io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => Ok(Io::WouldBlock),
        _ => Err(e),
    }
}

pub struct Epoll {
    fd: RawFd,
}

impl Epoll {
    pub fn new() -> io::Result<Epoll> {
        Ok(Epoll {
            fd: check(unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) })?,
        })
    }

    /// Watches `fd` for readability; `token` comes back in `wait`.
    pub fn add(&self, fd: RawFd, token: u64) -> io::Result<()> {
        let mut ev = libc::epoll_event {
            events: libc::EPOLLIN as u32,
            u64: token,
        };
        check(unsafe { libc::epoll_ctl(self.fd, libc::EPOLL_CTL_ADD, fd, &mut ev) })?;
        Ok(())
    }

    /// Stops watching `fd`.
    pub fn remove(&self, fd: RawFd) -> io::Result<()> {
        let mut ev = libc::epoll_event { events: 0, u64: 0 };
        check(unsafe { libc::epoll_ctl(self.fd, libc::EPOLL_CTL_DEL, fd, &mut ev) })?;
        Ok(())
    }

    /// Waits up to `timeout_ms` (−1: forever, 0: poll) and returns the ready tokens.
    pub fn wait(&self, events: &mut Vec<libc::epoll_event>, timeout_ms: i32) -> io::Result<usize> {
        events.resize(events.capacity().max(16), libc::epoll_event { events: 0, u64: 0 });
        let n = unsafe { libc::epoll_wait(self.fd, events.as_mut_ptr(), events.len() as i32, timeout_ms) };
        if n < 0 {
            let e = io::Error::last_os_error();
            return if e.kind() == io::ErrorKind::Interrupted {
                Ok(0)
            } else {
                Err(e)
            };
        }
        Ok(n as usize)
    }
}

pub struct Timer {
    pub fd: RawFd,
    /// The deadline the timer is armed for (0: disarmed or fired): re-arming it for the
    /// same deadline is skipped, which at gigabit rates saves a system call per packet.
    armed: std::cell::Cell<u64>,
}

impl Timer {
    pub fn new() -> io::Result<Timer> {
        let fd = check(unsafe { libc::timerfd_create(libc::CLOCK_MONOTONIC, libc::TFD_NONBLOCK | libc::TFD_CLOEXEC) })?;
        Ok(Timer {
            fd,
            armed: std::cell::Cell::new(0),
        })
    }

    /// Fires at the absolute CLOCK_MONOTONIC time `at_ns`; 0 disarms.
    pub fn arm_at(&self, at_ns: u64) -> io::Result<()> {
        if self.armed.get() == at_ns {
            return Ok(());
        }
        let ts = libc::timespec {
            tv_sec: (at_ns / 1_000_000_000) as _,
            tv_nsec: (at_ns % 1_000_000_000) as _,
        };
        let spec = libc::itimerspec {
            it_interval: libc::timespec { tv_sec: 0, tv_nsec: 0 },
            it_value: ts,
        };
        check(unsafe { libc::timerfd_settime(self.fd, libc::TFD_TIMER_ABSTIME, &spec, std::ptr::null_mut()) })?;
        self.armed.set(at_ns);
        Ok(())
    }

    /// Consumes an expiry (the timer is then disarmed).
    pub fn clear(&self) {
        self.armed.set(0);
        let mut b = [0u8; 8];
        let _ = read(self.fd, &mut b);
    }
}

/// SIGINT and SIGTERM delivered as a readable descriptor, so stopping is just another
/// event in the loop and the log is always flushed.
pub fn stop_signals() -> io::Result<RawFd> {
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGTERM);
        check(libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()))?;
        check(libc::signalfd(-1, &set, libc::SFD_NONBLOCK | libc::SFD_CLOEXEC))
    }
}

/// The engine must not outlive the process that set the network up.
pub fn die_with_parent() {
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM as libc::c_ulong, 0, 0, 0) };
}

/// Puts the calling thread under SCHED_FIFO at `priority`.
pub fn set_realtime(priority: i32) -> io::Result<()> {
    let param = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: valid pointer; pid 0 = calling thread.
    check(unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) })?;
    Ok(())
}

/// Back to normal (CFS) scheduling for the calling thread.
pub fn set_normal() -> io::Result<()> {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: valid pointer; pid 0 = calling thread.
    check(unsafe { libc::sched_setscheduler(0, libc::SCHED_OTHER, &param) })?;
    Ok(())
}

/// Pins the calling thread to `cpu`.
pub fn pin_to_cpu(cpu: usize) -> io::Result<()> {
    // SAFETY: a zeroed cpu_set_t is a valid empty set; pid 0 = calling thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        check(libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set))?;
    }
    Ok(())
}
