//! TCP_INFO sampling: the application byte count and a TCP_INFO reading on a grid of
//! absolute deadlines, for the series.

use std::io;
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use crate::sys;
use crate::tcpinfo::{self, TcpInfo};

/// One TCP_INFO reading with the application byte count at that instant.
pub struct Sample {
    pub conn: u32,
    pub t_ns: u64,
    /// Cumulative payload bytes written (sender) or read (receiver) by the application.
    pub bytes: u64,
    pub info: TcpInfo,
}

/// Byte counter plus TCP_INFO sampling on a grid of absolute deadlines. Samples are taken
/// by whoever notices a deadline has passed first: the I/O loop after each read or write
/// (so a busy CPU cannot starve sampling) or a background thread (so a blocked I/O loop
/// does not stop it).
pub struct Progress {
    bytes: AtomicU64,
    next_ns: AtomicU64,
    interval_ns: u64,
    conn: u32,
    sock: TcpStream,
    samples: Mutex<Vec<Sample>>,
}

impl Progress {
    pub fn new(stream: &TcpStream, conn: u32, interval_ns: u64) -> io::Result<Progress> {
        Ok(Progress {
            bytes: AtomicU64::new(0),
            next_ns: AtomicU64::new(sys::now_ns()),
            interval_ns,
            conn,
            sock: stream.try_clone()?,
            samples: Mutex::new(Vec::with_capacity(4096)),
        })
    }

    /// Counts `n` application bytes and samples if a deadline has passed.
    #[inline]
    pub fn add(&self, n: usize) {
        self.bytes.fetch_add(n as u64, Ordering::Relaxed);
        self.maybe_sample();
    }

    #[inline]
    fn maybe_sample(&self) {
        let now = sys::now_ns();
        let due = self.next_ns.load(Ordering::Relaxed);
        if now < due {
            return;
        }
        let next = due + ((now - due) / self.interval_ns + 1) * self.interval_ns;
        if self
            .next_ns
            .compare_exchange(due, next, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
        {
            self.sample(now);
        }
    }

    fn sample(&self, t_ns: u64) {
        if let Ok(info) = tcpinfo::read(&self.sock) {
            let s = Sample {
                conn: self.conn,
                t_ns,
                bytes: self.bytes.load(Ordering::Relaxed),
                info,
            };
            self.samples.lock().unwrap().push(s);
        }
    }
}

/// Background thread that keeps sampling while the I/O loop is blocked.
pub struct Sampler {
    pub progress: Arc<Progress>,
    done: Arc<AtomicBool>,
    handle: JoinHandle<()>,
}

impl Sampler {
    pub fn start(progress: Arc<Progress>) -> io::Result<Sampler> {
        let done = Arc::new(AtomicBool::new(false));
        let (p, d) = (progress.clone(), done.clone());
        let handle = thread::Builder::new()
            .name(format!("tcpinfo-{}", progress.conn))
            .spawn(move || {
                while !d.load(Ordering::Acquire) && !sys::stop_requested() {
                    p.maybe_sample();
                    let now = sys::now_ns();
                    let next = p.next_ns.load(Ordering::Relaxed);
                    if next > now {
                        thread::park_timeout(Duration::from_nanos((next - now).min(100_000_000)));
                    }
                }
            })?;
        Ok(Sampler { progress, done, handle })
    }

    /// Stops the thread, takes a last sample now and returns all samples.
    pub fn finish(self) -> Vec<Sample> {
        self.done.store(true, Ordering::Release);
        self.handle.thread().unpark();
        let _ = self.handle.join();
        self.progress.sample(sys::now_ns());
        std::mem::take(&mut *self.progress.samples.lock().unwrap())
    }
}
