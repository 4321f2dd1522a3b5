//! How hosts are attached to the engine: an inherited TUN descriptor, or the engine's
//! end of a veth pair read through an AF_PACKET TPACKET_V2 receive ring (each frame
//! carries the kernel's receive timestamp, taken in the sender's transmit path) and
//! written with Ethernet frames on the same socket (docs/engine-config.md).
//!
//! TPACKET_V2 rather than V3: a V3 ring hands frames to the reader only when a block is
//! retired (full, or after its timeout of at least 1 ms), which at idle delays every
//! packet by up to that timeout; a V2 ring wakes the reader per frame and still drains
//! many frames per wake-up under load.

use std::ffi::CString;
use std::io;
use std::os::fd::RawFd;

use linkem::Nanos;

fn check(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// Enters the network namespace `name` (under /run/netns) or at path `name`, for the
/// whole process: called before any socket is opened and before other threads exist.
pub fn enter_netns(name: &str) -> io::Result<()> {
    let path = if name.starts_with('/') {
        name.to_string()
    } else {
        format!("/run/netns/{name}")
    };
    let c = CString::new(path).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: valid C string; the descriptor is closed below.
    let fd = check(unsafe { libc::open(c.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) })?;
    let r = check(unsafe { libc::setns(fd, libc::CLONE_NEWNET) });
    unsafe { libc::close(fd) };
    r.map(|_| ())
}

/// Where packets for a host go.
pub enum Egress {
    Tun {
        fd: RawFd,
    },
    /// A packet socket bound to the engine's veth end; `header` is the Ethernet header
    /// (host's MAC, engine's MAC, IPv4) put before every packet.
    Packet {
        fd: RawFd,
        header: [u8; 14],
    },
}

impl Egress {
    pub fn send(&self, packet: &[u8]) -> io::Result<()> {
        let n = match self {
            Egress::Tun { fd } => unsafe { libc::write(*fd, packet.as_ptr().cast(), packet.len()) },
            Egress::Packet { fd, header } => {
                let iov = [
                    libc::iovec {
                        iov_base: header.as_ptr() as *mut _,
                        iov_len: header.len(),
                    },
                    libc::iovec {
                        iov_base: packet.as_ptr() as *mut _,
                        iov_len: packet.len(),
                    },
                ];
                // SAFETY: both buffers are valid for their lengths.
                unsafe { libc::writev(*fd, iov.as_ptr(), 2) }
            }
        };
        if n < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(())
        }
    }

    /// Sends the host a frame its stack discards on arrival (EtherType 0x88B5, IEEE's
    /// local experimental type: no protocol handler takes it, no IP layer sees it), to keep
    /// the hand-over path warm; `false` when there is no such path (TUN) or it failed.
    pub fn send_warm(&self) -> bool {
        let Egress::Packet { fd, header } = self else {
            return false;
        };
        let mut frame = [0u8; 60];
        frame[..12].copy_from_slice(&header[..12]);
        frame[12..14].copy_from_slice(&ETH_P_LOCAL_EXPERIMENTAL.to_be_bytes());
        // SAFETY: the frame is valid for its length.
        unsafe { libc::write(*fd, frame.as_ptr().cast(), frame.len()) == frame.len() as isize }
    }
}

const SOL_PACKET: libc::c_int = 263;
const PACKET_RX_RING: libc::c_int = 5;
const PACKET_STATISTICS: libc::c_int = 6;
const PACKET_VERSION: libc::c_int = 10;
const PACKET_QDISC_BYPASS: libc::c_int = 20;
const PACKET_IGNORE_OUTGOING: libc::c_int = 23;
const TPACKET_V2: libc::c_int = 1;
const TP_STATUS_KERNEL: u32 = 0;
const TP_STATUS_USER: u32 = 1;
const TP_STATUS_TS_SOFTWARE: u32 = 1 << 29;
const ETH_P_ALL: u16 = 0x0003;
const ETH_P_IP: u16 = 0x0800;
const ETH_P_LOCAL_EXPERIMENTAL: u16 = 0x88B5;
const ETH_HLEN: usize = 14;

const FRAME_SIZE: u32 = 2048;
const BLOCK_SIZE: u32 = 1 << 16;
const BLOCK_NR: u32 = 256;

#[repr(C)]
struct TpacketReq {
    block_size: u32,
    block_nr: u32,
    frame_size: u32,
    frame_nr: u32,
}

#[repr(C)]
struct Tpacket2Hdr {
    status: u32,
    len: u32,
    snaplen: u32,
    mac: u16,
    net: u16,
    sec: u32,
    nsec: u32,
    vlan_tci: u16,
    vlan_tpid: u16,
    padding: [u8; 4],
}

#[repr(C)]
#[derive(Default)]
struct TpacketStats {
    packets: u32,
    drops: u32,
}

/// A frame in a receive ring: where it is and what the kernel says about it.
pub struct Frame {
    pub slot: usize,
    /// Receive time, CLOCK_MONOTONIC ns (converted from the kernel's CLOCK_REALTIME stamp).
    pub stamp: Nanos,
    pub from_kernel: bool,
}

/// The receive side of a veth attachment.
pub struct RxRing {
    pub fd: RawFd,
    ring: *mut u8,
    ring_len: usize,
    frames: usize,
    next: usize,
    /// Frames the kernel dropped for lack of room (summed over PACKET_STATISTICS reads).
    pub drops: u64,
}

fn setsockopt<T>(fd: RawFd, opt: libc::c_int, v: &T) -> io::Result<()> {
    // SAFETY: `v` is a valid value of the size passed.
    check(unsafe {
        libc::setsockopt(
            fd,
            SOL_PACKET,
            opt,
            (v as *const T).cast(),
            std::mem::size_of::<T>() as u32,
        )
    })?;
    Ok(())
}

/// Opens a packet socket on `ifname` (in the current namespace) with a receive ring and
/// kernel receive timestamps; returns the ring and the egress writing to `peer_mac`.
pub fn open_veth(ifname: &str, mac: [u8; 6], peer_mac: [u8; 6]) -> io::Result<(RxRing, Egress)> {
    // SAFETY: plain socket calls; every pointer passed is valid for its length.
    let fd = check(unsafe {
        libc::socket(
            libc::AF_PACKET,
            libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            ETH_P_ALL.to_be() as i32,
        )
    })?;
    let close_on_err = |e: io::Error| {
        unsafe { libc::close(fd) };
        e
    };
    let c = CString::new(ifname).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    let ifindex = unsafe { libc::if_nametoindex(c.as_ptr()) };
    if ifindex == 0 {
        return Err(close_on_err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("no interface {ifname}"),
        )));
    }
    setsockopt(fd, PACKET_VERSION, &TPACKET_V2).map_err(close_on_err)?;
    // Our own transmissions are not arrivals; the engine's frames skip the qdisc.
    setsockopt(fd, PACKET_IGNORE_OUTGOING, &1i32).map_err(close_on_err)?;
    setsockopt(fd, PACKET_QDISC_BYPASS, &1i32).map_err(close_on_err)?;
    // Asking for timestamps turns on the kernel's receive stamping (netif_rx), which the
    // ring then reports instead of the time the frame was copied into it.
    let one = 1i32;
    check(unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_TIMESTAMPNS,
            (&one as *const i32).cast(),
            4,
        )
    })
    .map_err(close_on_err)?;
    let sndbuf = 8i32 << 20;
    unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_SNDBUFFORCE,
            (&sndbuf as *const i32).cast(),
            4,
        )
    };
    let frames = (BLOCK_SIZE / FRAME_SIZE * BLOCK_NR) as usize;
    let req = TpacketReq {
        block_size: BLOCK_SIZE,
        block_nr: BLOCK_NR,
        frame_size: FRAME_SIZE,
        frame_nr: frames as u32,
    };
    setsockopt(fd, PACKET_RX_RING, &req).map_err(close_on_err)?;
    let ring_len = (BLOCK_SIZE * BLOCK_NR) as usize;
    // SAFETY: maps the ring the kernel just allocated for this socket.
    let ring = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            ring_len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED | libc::MAP_LOCKED,
            fd,
            0,
        )
    };
    let ring = if ring == libc::MAP_FAILED {
        // MAP_LOCKED may exceed RLIMIT_MEMLOCK; the ring works unlocked too.
        unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                ring_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                0,
            )
        }
    } else {
        ring
    };
    if ring == libc::MAP_FAILED {
        return Err(close_on_err(io::Error::last_os_error()));
    }
    let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    sll.sll_family = libc::AF_PACKET as u16;
    sll.sll_protocol = ETH_P_ALL.to_be();
    sll.sll_ifindex = ifindex as i32;
    check(unsafe {
        libc::bind(
            fd,
            (&sll as *const libc::sockaddr_ll).cast(),
            std::mem::size_of::<libc::sockaddr_ll>() as u32,
        )
    })
    .map_err(close_on_err)?;
    let mut header = [0u8; ETH_HLEN];
    header[..6].copy_from_slice(&peer_mac);
    header[6..12].copy_from_slice(&mac);
    header[12..].copy_from_slice(&ETH_P_IP.to_be_bytes());
    Ok((
        RxRing {
            fd,
            ring: ring.cast(),
            ring_len,
            frames,
            next: 0,
            drops: 0,
        },
        Egress::Packet { fd, header },
    ))
}

impl RxRing {
    fn hdr(&self, slot: usize) -> *mut Tpacket2Hdr {
        // SAFETY: slot < frames, so the header lies inside the mapping.
        unsafe { self.ring.add(slot * FRAME_SIZE as usize).cast() }
    }

    /// Whether the next frame is the reader's: a read of the shared status word, no
    /// system call (the forwarding loop polls this while it spins).
    pub fn has_frame(&self) -> bool {
        // SAFETY: the status word is shared with the kernel; read it volatile.
        unsafe { std::ptr::read_volatile(&(*self.hdr(self.next)).status) & TP_STATUS_USER != 0 }
    }

    /// Up to `max` frames ready for the reader, in ring order, appended to `out`
    /// (`real_to_mono`: CLOCK_REALTIME − CLOCK_MONOTONIC in ns). Each must be released.
    pub fn ready(&mut self, max: usize, real_to_mono: i64, host: usize, out: &mut Vec<(Frame, usize)>) -> usize {
        let mut n = 0;
        // At most one lap: frames stay the user's until released, so on a full ring the
        // next slot after a lap is one already taken (without the bound this looped for
        // ever, pushing the same frames until the kernel killed the engine for memory).
        while n < max.min(self.frames) {
            let h = self.hdr(self.next);
            // SAFETY: the status word is shared with the kernel; read it volatile and
            // only then (acquire) the rest of the header.
            let status = unsafe { std::ptr::read_volatile(&(*h).status) };
            if status & TP_STATUS_USER == 0 {
                break;
            }
            std::sync::atomic::fence(std::sync::atomic::Ordering::Acquire);
            let (sec, nsec) = unsafe { ((*h).sec as i64, (*h).nsec as i64) };
            let stamp = (sec * 1_000_000_000 + nsec - real_to_mono).max(0) as u64;
            out.push((
                Frame {
                    slot: self.next,
                    stamp,
                    from_kernel: status & TP_STATUS_TS_SOFTWARE != 0,
                },
                host,
            ));
            self.next = (self.next + 1) % self.frames;
            n += 1;
        }
        n
    }

    /// The frame's bytes from its Ethernet header on, and its length on the wire (larger
    /// than the bytes when the ring truncated it).
    pub fn bytes(&self, slot: usize) -> (&[u8], usize) {
        let h = self.hdr(slot);
        // SAFETY: the kernel placed `snaplen` bytes at offset `mac` within the frame.
        unsafe {
            let (mac, snap, len) = ((*h).mac as usize, (*h).snaplen as usize, (*h).len as usize);
            let snap = snap.min(FRAME_SIZE as usize - mac);
            (
                std::slice::from_raw_parts(self.ring.add(slot * FRAME_SIZE as usize + mac), snap),
                len,
            )
        }
    }

    /// Hands a frame back to the kernel.
    pub fn release(&self, slot: usize) {
        std::sync::atomic::fence(std::sync::atomic::Ordering::Release);
        // SAFETY: the slot is ours until this store.
        unsafe { std::ptr::write_volatile(&mut (*self.hdr(slot)).status, TP_STATUS_KERNEL) };
    }

    /// Adds the kernel's count of frames dropped for lack of ring room since the last call.
    pub fn update_drops(&mut self) {
        let mut st = TpacketStats::default();
        let mut len = std::mem::size_of::<TpacketStats>() as u32;
        // SAFETY: valid pointers of the sizes passed.
        let r = unsafe {
            libc::getsockopt(
                self.fd,
                SOL_PACKET,
                PACKET_STATISTICS,
                (&mut st as *mut TpacketStats).cast(),
                &mut len,
            )
        };
        if r == 0 {
            self.drops += st.drops as u64;
        }
    }
}

impl Drop for RxRing {
    fn drop(&mut self) {
        // SAFETY: the mapping and descriptor are ours.
        unsafe {
            libc::munmap(self.ring.cast(), self.ring_len);
            libc::close(self.fd);
        }
    }
}

/// Strips the Ethernet header of a frame: the IP packet (trimmed to its total length,
/// so padding never travels), or None for a frame that is not IPv4.
pub fn ip_of_frame(frame: &[u8]) -> Option<&[u8]> {
    if frame.len() < ETH_HLEN || frame[12..14] != ETH_P_IP.to_be_bytes() {
        return None;
    }
    let ip = &frame[ETH_HLEN..];
    if ip.len() >= 4 {
        let total = u16::from_be_bytes([ip[2], ip[3]]) as usize;
        if total >= 20 && total <= ip.len() {
            return Some(&ip[..total]);
        }
    }
    Some(ip)
}

/// CLOCK_REALTIME − CLOCK_MONOTONIC (ns), from the tightest of a few bracketed readings.
pub fn real_to_mono_offset() -> i64 {
    let read = |clock| {
        let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        unsafe { libc::clock_gettime(clock, &mut ts) };
        ts.tv_sec * 1_000_000_000 + ts.tv_nsec
    };
    let mut best = (i64::MAX, 0);
    for _ in 0..5 {
        let a = read(libc::CLOCK_MONOTONIC);
        let r = read(libc::CLOCK_REALTIME);
        let b = read(libc::CLOCK_MONOTONIC);
        if b - a < best.0 {
            best = (b - a, r - (a + (b - a) / 2));
        }
    }
    best.1
}
