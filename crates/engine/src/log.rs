//! The packet event log (format: docs/packet-log.md). Records are encoded on the
//! forwarding thread and written by a thread of their own, so a slow disk never delays a
//! packet.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::mpsc::{sync_channel, SyncSender};
use std::thread::JoinHandle;

use engine::wire::FlowKey;

pub const RECORD_SIZE: usize = 40;
const HEADER: &[u8; 8] = b"TLABLOG\0";
const VERSION: u32 = 1;
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
    pub const TUN_WRITE_FAILED: u8 = 11;
    pub const NOT_IPV4: u8 = 12;
}

/// `direction` value of records that are not about a link direction.
pub const NO_DIRECTION: u16 = u16::MAX;

pub struct PacketLog {
    batch: Vec<u8>,
    tx: Option<SyncSender<Vec<u8>>>,
    writer: Option<JoinHandle<std::io::Result<()>>>,
}

impl PacketLog {
    pub fn create(path: &Path) -> std::io::Result<PacketLog> {
        let mut out = BufWriter::with_capacity(1 << 20, File::create(path)?);
        out.write_all(HEADER)?;
        out.write_all(&VERSION.to_le_bytes())?;
        out.write_all(&(RECORD_SIZE as u32).to_le_bytes())?;
        // Bounded: if the disk cannot keep up for long, the engine blocks rather than
        // growing without limit; the lateness statistics would then show it.
        let (tx, rx) = sync_channel::<Vec<u8>>(256);
        let writer = std::thread::Builder::new().name("tlab-log".into()).spawn(move || {
            for chunk in rx {
                out.write_all(&chunk)?;
            }
            out.flush()
        })?;
        Ok(PacketLog {
            batch: Vec::with_capacity(BATCH_RECORDS * RECORD_SIZE),
            tx: Some(tx),
            writer: Some(writer),
        })
    }

    #[allow(clippy::too_many_arguments)]
    pub fn record(
        &mut self,
        t_ns: u64,
        packet_id: u64,
        key: &FlowKey,
        size: u32,
        direction: u16,
        event: Event,
        reason: u8,
        copy: bool,
    ) {
        let b = &mut self.batch;
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
        b.push(copy as u8);
        b.extend_from_slice(&key.tcp_seq.to_le_bytes());
        if b.len() >= BATCH_RECORDS * RECORD_SIZE {
            self.flush_batch();
        }
    }

    fn flush_batch(&mut self) {
        if self.batch.is_empty() {
            return;
        }
        let chunk = std::mem::replace(&mut self.batch, Vec::with_capacity(BATCH_RECORDS * RECORD_SIZE));
        if let Some(tx) = &self.tx {
            // The writer only goes away on an I/O error, reported by `close`.
            let _ = tx.send(chunk);
        }
    }

    /// Writes everything out and reports the writer's I/O error, if any.
    pub fn close(mut self) -> std::io::Result<()> {
        self.flush_batch();
        drop(self.tx.take());
        match self.writer.take().map(|w| w.join()) {
            Some(Ok(r)) => r,
            Some(Err(_)) => Err(std::io::Error::other("log writer panicked")),
            None => Ok(()),
        }
    }
}
