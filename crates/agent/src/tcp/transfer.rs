//! Byte-stream work shared by client and server: reads and writes that time out every
//! POLL to honour the stop flag, and the bulk sender.

use std::io::{self, Read, Write};
use std::net::TcpStream;

use super::sampler::Progress;
use super::POLL;
use crate::sys;
use crate::tcpstream::Stream;

/// Writes some bytes; None if a stop was requested while blocked.
pub fn write_some(s: &mut Stream, buf: &[u8]) -> io::Result<Option<usize>> {
    sys::until_stopped(|| s.write(buf))
}

/// Writes all of `buf`; false if a stop was requested first.
pub fn write_all(s: &mut Stream, mut buf: &[u8]) -> io::Result<bool> {
    while !buf.is_empty() {
        match write_some(s, buf)? {
            None => return Ok(false),
            Some(0) => return Err(io::Error::new(io::ErrorKind::WriteZero, "connection closed")),
            Some(n) => buf = &buf[n..],
        }
    }
    Ok(true)
}

/// Reads some bytes (Some(0) = EOF); None if a stop was requested while blocked.
pub fn read_some(s: &mut Stream, buf: &mut [u8]) -> io::Result<Option<usize>> {
    sys::until_stopped(|| s.read(buf))
}

pub enum Filled {
    Full,
    /// EOF after this many bytes.
    Eof(usize),
    Stopped,
}

pub fn read_full(s: &mut Stream, buf: &mut [u8]) -> io::Result<Filled> {
    let mut got = 0;
    while got < buf.len() {
        match read_some(s, &mut buf[got..])? {
            None => return Ok(Filled::Stopped),
            Some(0) => return Ok(Filled::Eof(got)),
            Some(n) => got += n,
        }
    }
    Ok(Filled::Full)
}

/// After this end's last byte: unless a stop came first (`stopped`), our FIN, then read
/// and discard until the peer closes too (each end closes only after reading everything).
/// Returns (bytes read, EOF time), or None if stopped before or while waiting.
pub fn close_after_sending(s: &mut Stream, buf: &mut [u8], stopped: bool) -> io::Result<Option<(u64, u64)>> {
    if stopped {
        return Ok(None);
    }
    s.shutdown_write()?;
    let mut total = 0u64;
    loop {
        match read_some(s, buf)? {
            None => return Ok(None),
            Some(0) => return Ok(Some((total, sys::now_ns()))),
            Some(n) => total += n as u64,
        }
    }
}

pub fn prepare(stream: &TcpStream) -> io::Result<()> {
    stream.set_nodelay(true)?;
    stream.set_read_timeout(Some(POLL))?;
    stream.set_write_timeout(Some(POLL))?;
    Ok(())
}

/// Sends bulk data until `limit` bytes or the `deadline`. Returns bytes sent and whether
/// it was interrupted by a stop request.
/// `total` is increased as bytes go out, so it is right even when an error is returned.
pub fn send_bulk(
    s: &mut Stream,
    buf: &[u8],
    limit: Option<u64>,
    deadline: Option<u64>,
    counter: &Progress,
    total: &mut u64,
) -> io::Result<(u64, bool)> {
    let mut sent = 0u64;
    loop {
        let want = match limit {
            Some(l) if sent >= l => break,
            Some(l) => (l - sent).min(buf.len() as u64) as usize,
            None => buf.len(),
        };
        if let Some(d) = deadline {
            if sys::now_ns() >= d {
                break;
            }
        }
        match write_some(s, &buf[..want])? {
            None => return Ok((sent, true)),
            Some(0) => return Err(io::Error::new(io::ErrorKind::WriteZero, "connection closed")),
            Some(n) => {
                sent += n as u64;
                *total += n as u64;
                counter.add(n);
            }
        }
    }
    Ok((sent, false))
}
