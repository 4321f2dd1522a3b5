//! The packet event log (format: docs/packet-log.md). Records are encoded on the
//! forwarding thread and written by a thread of their own ([`BackgroundFile`]). Version
//! 3: records carry the model's time and the real one, and the transport payload length
//! (docs/packet-log.md).

use std::path::Path;

use crate::background_file::BackgroundFile;
use wire::FlowKey;

pub const RECORD_SIZE: usize = 50;
const HEADER: &[u8; 8] = b"TLABLOG\0";
pub const VERSION: u32 = 3;
const BATCH_RECORDS: usize = 8192;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Event {
    Arrival = 1,
    Departure = 2,
    Drop = 3,
}

/// Drop reasons beyond linkem's own (1..9): the engine's, all unintended.
pub mod reason {
    pub const NO_ROUTE: u8 = 10;
    /// Handing a packet to its host failed (a TUN write or a veth send); named
    /// `tun_write_failed` before contract version 2.
    pub const HOST_WRITE_FAILED: u8 = 11;
    pub const NOT_IPV4: u8 = 12;
    /// A frame larger than the link MTU came out of a host (an offload left on).
    pub const OVERSIZE: u8 = 13;
    /// The packets the engine holds (queues, delay lines) reached its memory limit: an
    /// unlimited queue fed faster than its rate.
    pub const MEMORY_LIMIT: u8 = 14;
}

/// Bits of a record's `flags` byte.
pub mod flag {
    /// The record is about a duplicate copy.
    pub const COPY: u8 = 1;
    /// A departure whose ECN codepoint the direction's queue changed from ECT(0)/ECT(1) to
    /// CE (the engine rewrote the IP header, checksum included, before passing it on).
    pub const CE_MARKED: u8 = 2;

    /// `COPY` if `copy`, else no bit.
    pub fn copy(copy: bool) -> u8 {
        if copy {
            COPY
        } else {
            0
        }
    }
}

/// `direction` value of records that are not about a link direction.
pub const NO_DIRECTION: u16 = u16::MAX;

pub struct PacketLog {
    file: BackgroundFile,
}

impl PacketLog {
    pub fn create(path: &Path) -> std::io::Result<PacketLog> {
        let mut head = HEADER.to_vec();
        head.extend_from_slice(&VERSION.to_le_bytes());
        head.extend_from_slice(&(RECORD_SIZE as u32).to_le_bytes());
        // 512 batches of 384 KiB: 192 MiB, ~12 s of logging at 1 Gbit/s.
        let file = BackgroundFile::create(path, &head, BATCH_RECORDS * RECORD_SIZE, 512, "tlab-log", "log")?;
        Ok(PacketLog { file })
    }

    /// One record: `t_ns` is the model's time (arrival: the kernel's receive timestamp
    /// on the first hop; departure and drop: the due time), `t_actual_ns` the real time
    /// the engine did it (departure to a host: the hand-over; otherwise when the engine
    /// processed the event).
    #[allow(clippy::too_many_arguments)]
    pub fn record(
        &mut self,
        t_ns: u64,
        t_actual_ns: u64,
        packet_id: u64,
        key: &FlowKey,
        size: u32,
        direction: u16,
        event: Event,
        reason: u8,
        flags: u8,
    ) {
        let b = self.file.batch();
        b.extend_from_slice(&t_ns.to_le_bytes());
        b.extend_from_slice(&packet_id.to_le_bytes());
        b.extend_from_slice(&key.src.to_le_bytes());
        b.extend_from_slice(&key.dst.to_le_bytes());
        b.extend_from_slice(&key.sport.to_le_bytes());
        b.extend_from_slice(&key.dport.to_le_bytes());
        b.extend_from_slice(&(size.min(u16::MAX as u32) as u16).to_le_bytes());
        b.extend_from_slice(&direction.to_le_bytes());
        b.push(key.proto);
        b.push(event as u8);
        b.push(reason);
        b.push(flags);
        b.extend_from_slice(&key.tcp_seq.to_le_bytes());
        b.extend_from_slice(&t_actual_ns.to_le_bytes());
        b.extend_from_slice(&key.payload_len.to_le_bytes());
        self.file.appended();
    }

    /// Writes everything out and reports the writer's I/O error, if any.
    pub fn close(self) -> std::io::Result<()> {
        self.file.close()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes the sample log Python reads back (tests/test_contracts.py): three records
    /// with every field set. TLAB_BLESS=1 rewrites the file; otherwise it must match.
    #[test]
    fn sample_log_for_python() {
        let dir = std::env::temp_dir().join(format!("tlab-log-sample-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("packets.tlog");
        let mut log = PacketLog::create(&path).unwrap();
        let key = FlowKey {
            src: 0x0a00_0001,
            dst: 0x0a00_0002,
            sport: 40000,
            dport: 5001,
            proto: 6,
            tcp_seq: 123_456_789,
            payload_len: 1448,
        };
        log.record(1_000_000_000, 1_000_000_000, 7, &key, 1500, 0, Event::Arrival, 0, 0);
        log.record(
            1_025_000_000,
            1_025_000_850,
            7,
            &key,
            1500,
            0,
            Event::Departure,
            0,
            flag::CE_MARKED,
        );
        log.record(1_030_000_000, 1_030_000_100, 8, &key, 52, 1, Event::Drop, 1, flag::COPY);
        log.close().unwrap();
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(bytes.len(), 16 + 3 * RECORD_SIZE);
        let data = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/packets_v3.tlog");
        if std::env::var("TLAB_BLESS").as_deref() == Ok("1") {
            std::fs::write(data, &bytes).unwrap();
        }
        assert_eq!(
            std::fs::read(data).unwrap(),
            bytes,
            "{data} differs: TLAB_BLESS=1 to rewrite"
        );
    }
}
