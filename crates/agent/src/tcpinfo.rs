//! `struct tcp_info` as the kernel lays it out (include/uapi/linux/tcp.h), read with
//! getsockopt(TCP_INFO). The kernel copies min(our size, its size) bytes and returns the
//! length; fields past that length are reported as absent (older kernels).

use std::os::fd::AsRawFd;

use serde::Serialize;

/// Kernel layout of `struct tcp_info` up to `tcpi_rehash` (Linux 5.x/6.x). Offsets are
/// checked by a unit test.
#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
pub struct RawTcpInfo {
    pub state: u8,
    pub ca_state: u8,
    pub retransmits: u8,
    pub probes: u8,
    pub backoff: u8,
    pub options: u8,
    pub wscale: u8,      // snd_wscale:4, rcv_wscale:4
    pub app_limited: u8, // delivery_rate_app_limited:1, fastopen_client_fail:2

    pub rto: u32,
    pub ato: u32,
    pub snd_mss: u32,
    pub rcv_mss: u32,

    pub unacked: u32,
    pub sacked: u32,
    pub lost: u32,
    pub retrans: u32,
    pub fackets: u32,

    pub last_data_sent: u32,
    pub last_ack_sent: u32,
    pub last_data_recv: u32,
    pub last_ack_recv: u32,

    pub pmtu: u32,
    pub rcv_ssthresh: u32,
    pub rtt: u32,
    pub rttvar: u32,
    pub snd_ssthresh: u32,
    pub snd_cwnd: u32,
    pub advmss: u32,
    pub reordering: u32,

    pub rcv_rtt: u32,
    pub rcv_space: u32,

    pub total_retrans: u32,

    pub pacing_rate: u64,
    pub max_pacing_rate: u64,
    pub bytes_acked: u64,
    pub bytes_received: u64,
    pub segs_out: u32,
    pub segs_in: u32,

    pub notsent_bytes: u32,
    pub min_rtt: u32,
    pub data_segs_in: u32,
    pub data_segs_out: u32,

    pub delivery_rate: u64,

    pub busy_time: u64,
    pub rwnd_limited: u64,
    pub sndbuf_limited: u64,

    pub delivered: u32,
    pub delivered_ce: u32,

    pub bytes_sent: u64,
    pub bytes_retrans: u64,
    pub dsack_dups: u32,
    pub reord_seen: u32,

    pub rcv_ooopack: u32,
    pub snd_wnd: u32,
    pub rcv_wnd: u32,
    pub rehash: u32,
}

/// Byte offsets just past selected fields, to know whether the kernel filled them.
pub const END_DELIVERY_RATE: usize = 168;
pub const END_SNDBUF_LIMITED: usize = 192;
pub const END_BYTES_RETRANS: usize = 216;
pub const END_SND_WND: usize = 232;
pub const END_RCV_WND: usize = 236;

/// One TCP_INFO reading plus how many bytes the kernel filled in.
#[derive(Clone, Copy, Debug, Default)]
pub struct TcpInfo {
    pub raw: RawTcpInfo,
    pub len: usize,
}

impl TcpInfo {
    pub fn has(&self, end_offset: usize) -> bool {
        self.len >= end_offset
    }
    pub fn cwnd_bytes(&self) -> u64 {
        self.raw.snd_cwnd as u64 * self.raw.snd_mss as u64
    }
    pub fn app_limited(&self) -> bool {
        self.raw.app_limited & 1 != 0
    }

    /// The final reading for summaries (fields the kernel did not fill are null).
    pub fn summary(self) -> TcpInfoSummary {
        let r = &self.raw;
        let opt = |end: usize, v: u64| self.has(end).then_some(v);
        TcpInfoSummary {
            state: r.state,
            ca_state: r.ca_state,
            snd_mss: r.snd_mss,
            rcv_mss: r.rcv_mss,
            pmtu: r.pmtu,
            cwnd: r.snd_cwnd,
            cwnd_bytes: self.cwnd_bytes(),
            ssthresh: r.snd_ssthresh,
            srtt_us: r.rtt,
            rttvar_us: r.rttvar,
            min_rtt_us: r.min_rtt,
            rcv_rtt_us: r.rcv_rtt,
            rto_us: r.rto,
            unacked: r.unacked,
            lost: r.lost,
            total_retrans: r.total_retrans,
            reordering: r.reordering,
            pacing_rate_bps: r.pacing_rate,
            delivery_rate_bps: opt(END_DELIVERY_RATE, r.delivery_rate),
            bytes_acked: r.bytes_acked,
            bytes_received: r.bytes_received,
            segs_out: r.segs_out,
            segs_in: r.segs_in,
            busy_time_us: opt(END_SNDBUF_LIMITED, r.busy_time),
            rwnd_limited_us: opt(END_SNDBUF_LIMITED, r.rwnd_limited),
            sndbuf_limited_us: opt(END_SNDBUF_LIMITED, r.sndbuf_limited),
            bytes_sent: opt(END_BYTES_RETRANS, r.bytes_sent),
            bytes_retrans: opt(END_BYTES_RETRANS, r.bytes_retrans),
            snd_wnd: opt(END_SND_WND, r.snd_wnd as u64),
        }
    }
}

/// The `tcp_info` object of tcp-client and tcp-server summaries.
#[derive(Clone, Debug, Serialize)]
pub struct TcpInfoSummary {
    pub state: u8,
    pub ca_state: u8,
    pub snd_mss: u32,
    pub rcv_mss: u32,
    pub pmtu: u32,
    pub cwnd: u32,
    pub cwnd_bytes: u64,
    pub ssthresh: u32,
    pub srtt_us: u32,
    pub rttvar_us: u32,
    pub min_rtt_us: u32,
    pub rcv_rtt_us: u32,
    pub rto_us: u32,
    pub unacked: u32,
    pub lost: u32,
    pub total_retrans: u32,
    pub reordering: u32,
    #[serde(rename = "pacing_rate_Bps")]
    pub pacing_rate_bps: u64,
    #[serde(rename = "delivery_rate_Bps")]
    pub delivery_rate_bps: Option<u64>,
    pub bytes_acked: u64,
    pub bytes_received: u64,
    pub segs_out: u32,
    pub segs_in: u32,
    pub busy_time_us: Option<u64>,
    pub rwnd_limited_us: Option<u64>,
    pub sndbuf_limited_us: Option<u64>,
    pub bytes_sent: Option<u64>,
    pub bytes_retrans: Option<u64>,
    pub snd_wnd: Option<u64>,
}

/// Reads TCP_INFO. Fails if the kernel returns less than the fields up to
/// `tcpi_delivery_rate` (Linux < 4.9), which the series needs.
pub fn read(fd: &impl AsRawFd) -> std::io::Result<TcpInfo> {
    let mut raw = RawTcpInfo::default();
    let mut len = std::mem::size_of::<RawTcpInfo>() as libc::socklen_t;
    // SAFETY: raw is a plain-old-data struct writable for `len` bytes.
    let rc = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            &mut raw as *mut RawTcpInfo as *mut libc::c_void,
            &mut len,
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let len = len as usize;
    if len < END_DELIVERY_RATE {
        return Err(std::io::Error::other(format!(
            "TCP_INFO returned {len} bytes, need at least {END_DELIVERY_RATE} (kernel too old)"
        )));
    }
    Ok(TcpInfo { raw, len })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::offset_of;

    #[test]
    fn layout_matches_kernel() {
        assert_eq!(offset_of!(RawTcpInfo, rto), 8);
        assert_eq!(offset_of!(RawTcpInfo, snd_mss), 16);
        assert_eq!(offset_of!(RawTcpInfo, rtt), 68);
        assert_eq!(offset_of!(RawTcpInfo, snd_cwnd), 80);
        assert_eq!(offset_of!(RawTcpInfo, total_retrans), 100);
        assert_eq!(offset_of!(RawTcpInfo, pacing_rate), 104);
        assert_eq!(offset_of!(RawTcpInfo, bytes_acked), 120);
        assert_eq!(offset_of!(RawTcpInfo, min_rtt), 148);
        assert_eq!(offset_of!(RawTcpInfo, delivery_rate) + 8, END_DELIVERY_RATE);
        assert_eq!(offset_of!(RawTcpInfo, sndbuf_limited) + 8, END_SNDBUF_LIMITED);
        assert_eq!(offset_of!(RawTcpInfo, bytes_retrans) + 8, END_BYTES_RETRANS);
        assert_eq!(offset_of!(RawTcpInfo, snd_wnd) + 4, END_SND_WND);
        assert_eq!(offset_of!(RawTcpInfo, rcv_wnd) + 4, END_RCV_WND);
        assert_eq!(offset_of!(RawTcpInfo, rcv_ssthresh), 64);
        assert_eq!(offset_of!(RawTcpInfo, rcv_space), 96);
        assert_eq!(std::mem::size_of::<RawTcpInfo>(), 240);
        // Cross-check against libc's definition where it has the same fields.
        assert_eq!(
            offset_of!(libc::tcp_info, tcpi_snd_cwnd),
            offset_of!(RawTcpInfo, snd_cwnd)
        );
        assert_eq!(
            offset_of!(libc::tcp_info, tcpi_total_retrans),
            offset_of!(RawTcpInfo, total_retrans)
        );
    }

    #[test]
    fn reads_from_a_live_socket() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let c = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let info = read(&c).unwrap();
        assert_eq!(info.raw.state, 1); // TCP_ESTABLISHED
        assert!(info.raw.snd_mss > 0);
        assert!(info.raw.snd_cwnd > 0);
    }
}
