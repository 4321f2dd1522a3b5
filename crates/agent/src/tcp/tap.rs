//! A packet socket (AF_PACKET, SOCK_DGRAM: packets from their IP header on) that sees one
//! direction of one TCP connection as it reaches this namespace, with the kernel's receive
//! time of each packet.
//!
//! The connection is picked by a classic BPF filter in the kernel (IPv4, TCP, not a
//! fragment, source address and port, destination port), so packets of other flows are
//! never copied to us; [`super::segment::parse`] checks the same again, and the
//! destination address, in userspace. Packets this host sends (PACKET_OUTGOING, seen on
//! loopback) are skipped. Kernel receive times come from SO_TIMESTAMPNS, which the kernel
//! stamps with CLOCK_REALTIME; each is moved to CLOCK_MONOTONIC with the offset between
//! the two clocks read right after the packet (both clocks tick at the same rate, so the
//! error is the clock reads' few hundred ns, unless the real-time clock is stepped).

use std::io;
use std::mem::{size_of, zeroed};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use super::segment::Direction;
use super::POLL;
use crate::sys;

const ETH_P_IP: u16 = 0x0800;
const PACKET_OUTGOING: u8 = 4;
/// Bytes asked for the tap's receive buffer, so a burst is not dropped while the
/// receiving thread is busy.
const RCVBUF: u64 = 8 << 20;

/// One captured packet.
pub struct Captured {
    /// Bytes of the packet in the caller's buffer.
    pub len: usize,
    /// The packet was larger than the buffer.
    pub truncated: bool,
    /// Kernel receive time, CLOCK_MONOTONIC ns; None if the kernel gave none.
    pub stamp_ns: Option<u64>,
}

pub struct PacketTap {
    fd: OwnedFd,
}

impl PacketTap {
    /// Opens the tap for segments of `dir` arriving in this namespace (any interface).
    /// Needs CAP_NET_RAW. Only IPv4 is supported.
    pub fn open(dir: &Direction) -> io::Result<PacketTap> {
        // Protocol 0 receives nothing until bind(), so no packet slips in before the filter.
        // SAFETY: plain socket(2) call; the fd is owned right after.
        let raw = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
        if raw < 0 {
            let e = io::Error::last_os_error();
            return Err(io::Error::new(
                e.kind(),
                format!("cannot open a packet socket (needs CAP_NET_RAW): {e}"),
            ));
        }
        // SAFETY: raw is a fresh descriptor nobody else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let tap = PacketTap { fd };
        tap.attach_filter(dir)?;
        sys::setsockopt_raw(&tap.fd, libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, &1i32.to_ne_bytes())?;
        sys::set_rcvbuf(&tap.fd, RCVBUF)?;
        let tv = libc::timeval {
            tv_sec: 0,
            tv_usec: POLL.as_micros() as libc::suseconds_t,
        };
        // SAFETY: timeval is plain data.
        let tv_bytes = unsafe { std::slice::from_raw_parts(&tv as *const _ as *const u8, size_of::<libc::timeval>()) };
        sys::setsockopt_raw(&tap.fd, libc::SOL_SOCKET, libc::SO_RCVTIMEO, tv_bytes)?;
        // SAFETY: sockaddr_ll is plain data; all-zero is a valid starting value.
        let mut sll: libc::sockaddr_ll = unsafe { zeroed() };
        sll.sll_family = libc::AF_PACKET as u16;
        sll.sll_protocol = ETH_P_IP.to_be();
        sll.sll_ifindex = 0; // every interface of the namespace
                             // SAFETY: sll is a valid sockaddr_ll of the length given.
        let rc = unsafe {
            libc::bind(
                tap.fd.as_raw_fd(),
                &sll as *const _ as *const libc::sockaddr,
                size_of::<libc::sockaddr_ll>() as libc::socklen_t,
            )
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(tap)
    }

    fn attach_filter(&self, dir: &Direction) -> io::Result<()> {
        let prog = filter_program(dir);
        let fprog = libc::sock_fprog {
            len: prog.len() as u16,
            filter: prog.as_ptr() as *mut libc::sock_filter,
        };
        // SAFETY: sock_fprog is plain data pointing at `prog`, alive for the call.
        let bytes =
            unsafe { std::slice::from_raw_parts(&fprog as *const _ as *const u8, size_of::<libc::sock_fprog>()) };
        sys::setsockopt_raw(&self.fd, libc::SOL_SOCKET, libc::SO_ATTACH_FILTER, bytes)
    }

    /// Waits up to POLL for the next incoming packet of the connection. Ok(None) on a
    /// timeout (or a skipped outgoing copy): poll the stop flag and call again.
    pub fn recv(&self, buf: &mut [u8]) -> io::Result<Option<Captured>> {
        // SAFETY: all-zero is valid for these plain structs; pointers set below stay
        // valid during recvmsg.
        let mut sll: libc::sockaddr_ll = unsafe { zeroed() };
        let mut iov = libc::iovec {
            iov_base: buf.as_mut_ptr() as *mut libc::c_void,
            iov_len: buf.len(),
        };
        let mut control = [0u64; 16];
        let mut msg: libc::msghdr = unsafe { zeroed() };
        msg.msg_name = &mut sll as *mut _ as *mut libc::c_void;
        msg.msg_namelen = size_of::<libc::sockaddr_ll>() as libc::socklen_t;
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr() as *mut libc::c_void;
        msg.msg_controllen = size_of::<[u64; 16]>();
        // SAFETY: msg points at live buffers of the stated sizes.
        let n = unsafe { libc::recvmsg(self.fd.as_raw_fd(), &mut msg, libc::MSG_TRUNC) };
        if n < 0 {
            let e = io::Error::last_os_error();
            return if sys::is_retry(&e) { Ok(None) } else { Err(e) };
        }
        if sll.sll_pkttype == PACKET_OUTGOING {
            return Ok(None);
        }
        let real_to_mono = clock_offset_ns();
        let mut stamp_ns = None;
        // SAFETY: walking the control buffer the kernel filled, with the libc macros.
        unsafe {
            let mut c = libc::CMSG_FIRSTHDR(&msg);
            while !c.is_null() {
                if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_TIMESTAMPNS {
                    let ts = std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const libc::timespec);
                    let real = ts.tv_sec as i128 * 1_000_000_000 + ts.tv_nsec as i128;
                    stamp_ns = u64::try_from(real + real_to_mono).ok();
                }
                c = libc::CMSG_NXTHDR(&msg, c);
            }
        }
        let n = n as usize;
        Ok(Some(Captured {
            len: n.min(buf.len()),
            truncated: n > buf.len(),
            stamp_ns,
        }))
    }

    /// Packets the kernel dropped on this socket (buffer full) since the last call
    /// (PACKET_STATISTICS resets its counters when read).
    pub fn drops(&self) -> io::Result<u64> {
        // SAFETY: tpacket_stats is plain data written by getsockopt.
        let mut st: libc::tpacket_stats = unsafe { zeroed() };
        let mut len = size_of::<libc::tpacket_stats>() as libc::socklen_t;
        let rc = unsafe {
            libc::getsockopt(
                self.fd.as_raw_fd(),
                libc::SOL_PACKET,
                libc::PACKET_STATISTICS,
                &mut st as *mut _ as *mut libc::c_void,
                &mut len,
            )
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(u64::from(st.tp_drops))
    }
}

/// CLOCK_MONOTONIC − CLOCK_REALTIME in ns, read back to back.
fn clock_offset_ns() -> i128 {
    let read = |clock| {
        let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: valid timespec pointer; both clocks always exist.
        unsafe { libc::clock_gettime(clock, &mut ts) };
        ts.tv_sec as i128 * 1_000_000_000 + ts.tv_nsec as i128
    };
    let real = read(libc::CLOCK_REALTIME);
    let mono = read(libc::CLOCK_MONOTONIC);
    mono - real
}

// Classic BPF opcodes (linux/bpf_common.h).
const LD_B_ABS: u16 = 0x30;
const LD_H_ABS: u16 = 0x28;
const LD_W_ABS: u16 = 0x20;
const LD_H_IND: u16 = 0x48;
const LDX_B_MSH: u16 = 0xb1;
const ALU_AND_K: u16 = 0x54;
const JEQ_K: u16 = 0x15;
const JSET_K: u16 = 0x45;
const RET_K: u16 = 0x06;

/// The filter: accept (whole) IPv4 TCP packets from `dir.from` to port `dir.to.port()`
/// that are not fragments; drop everything else. Offsets count from the IP header
/// (SOCK_DGRAM).
fn filter_program(dir: &Direction) -> Vec<libc::sock_filter> {
    let ins = |code, k| libc::sock_filter { code, jt: 0, jf: 0, k };
    // (instruction, jump to drop if the test fails / succeeds for JSET)
    let mut p = vec![
        ins(LD_B_ABS, 0),
        ins(ALU_AND_K, 0xf0),
        ins(JEQ_K, 0x40),
        ins(LD_B_ABS, 9),
        ins(JEQ_K, 6),
        ins(LD_W_ABS, 12),
        ins(JEQ_K, u32::from(*dir.from.ip())),
        ins(LD_H_ABS, 6),
        ins(JSET_K, 0x3fff),
        ins(LDX_B_MSH, 0),
        ins(LD_H_IND, 0),
        ins(JEQ_K, u32::from(dir.from.port())),
        ins(LD_H_IND, 2),
        ins(JEQ_K, u32::from(dir.to.port())),
        ins(RET_K, 0x0004_0000),
        ins(RET_K, 0),
    ];
    let drop_at = p.len() - 1;
    // Every instruction before the drop itself (a jump lands after itself).
    for (i, x) in p[..drop_at].iter_mut().enumerate() {
        let to_drop = (drop_at - i - 1) as u8;
        match x.code {
            JEQ_K => x.jf = to_drop,
            JSET_K => x.jt = to_drop,
            _ => {}
        }
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filter_jumps_land_on_the_drop() {
        let dir = Direction {
            from: "10.0.0.2:5201".parse().unwrap(),
            to: "10.0.0.1:40000".parse().unwrap(),
        };
        let p = filter_program(&dir);
        let last = p.len() - 1;
        assert_eq!((p[last].code, p[last].k), (RET_K, 0));
        for (i, x) in p.iter().enumerate() {
            match x.code {
                JEQ_K => assert_eq!(i + 1 + x.jf as usize, last),
                JSET_K => assert_eq!(i + 1 + x.jt as usize, last),
                _ => {}
            }
        }
        assert_eq!(p[6].k, 0x0a00_0002);
        assert_eq!(p[11].k, 5201);
        assert_eq!(p[13].k, 40000);
    }
}
