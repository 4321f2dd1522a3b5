//! pcapng capture of the packets leaving chosen link directions (docs/engine-config.md,
//! `capture`): one interface per direction, named after it, raw IPv4 frames
//! (LINKTYPE_IPV4), nanosecond timestamps of the actual hand-over. Like the packet log,
//! blocks are encoded on the forwarding thread and written by a thread of their own
//! ([`BackgroundFile`]).

use std::path::Path;

use crate::background_file::BackgroundFile;

const SHB: u32 = 0x0A0D_0D0A;
const IDB: u32 = 1;
const EPB: u32 = 6;
const BYTE_ORDER_MAGIC: u32 = 0x1A2B_3C4D;
/// Raw IPv4, no link-layer header (tcpdump.org link-layer types).
const LINKTYPE_IPV4: u16 = 228;
const OPT_END: u16 = 0;
const IF_NAME: u16 = 2;
const IF_TSRESOL: u16 = 9;
const BATCH_BYTES: usize = 1 << 20;

pub struct Capture {
    /// Per log direction index: its interface id in the file, if captured.
    interface: Vec<Option<u32>>,
    snaplen: u32,
    /// Added to CLOCK_MONOTONIC times to give the wall-clock times pcapng readers expect.
    mono_to_real_ns: i64,
    file: BackgroundFile,
}

/// Appends a block of `kind` whose body is `body` (padded to 4 bytes) to `out`.
fn block(out: &mut Vec<u8>, kind: u32, body: &[u8]) {
    let padded = body.len().next_multiple_of(4);
    let total = (12 + padded) as u32;
    out.extend_from_slice(&kind.to_le_bytes());
    out.extend_from_slice(&total.to_le_bytes());
    out.extend_from_slice(body);
    out.resize(out.len() + padded - body.len(), 0);
    out.extend_from_slice(&total.to_le_bytes());
}

fn option(out: &mut Vec<u8>, code: u16, value: &[u8]) {
    out.extend_from_slice(&code.to_le_bytes());
    out.extend_from_slice(&(value.len() as u16).to_le_bytes());
    out.extend_from_slice(value);
    out.resize(out.len().next_multiple_of(4), 0);
}

impl Capture {
    /// A capture file at `path` of the directions `captured` (log index, name), among
    /// `directions` log directions, keeping the first `snaplen` bytes of each packet.
    pub fn create(
        path: &Path,
        snaplen: u32,
        captured: &[(usize, String)],
        directions: usize,
        mono_to_real_ns: i64,
    ) -> std::io::Result<Capture> {
        let mut head = Vec::new();
        let mut shb = Vec::new();
        shb.extend_from_slice(&BYTE_ORDER_MAGIC.to_le_bytes());
        shb.extend_from_slice(&1u16.to_le_bytes());
        shb.extend_from_slice(&0u16.to_le_bytes());
        shb.extend_from_slice(&(-1i64).to_le_bytes()); // section length not given
        block(&mut head, SHB, &shb);
        let mut interface = vec![None; directions];
        for (id, (dir, name)) in captured.iter().enumerate() {
            let mut idb = Vec::new();
            idb.extend_from_slice(&LINKTYPE_IPV4.to_le_bytes());
            idb.extend_from_slice(&0u16.to_le_bytes());
            idb.extend_from_slice(&snaplen.to_le_bytes());
            option(&mut idb, IF_NAME, name.as_bytes());
            option(&mut idb, IF_TSRESOL, &[9]);
            option(&mut idb, OPT_END, &[]);
            block(&mut head, IDB, &idb);
            interface[*dir] = Some(id as u32);
        }
        // 192 batches of 1 MiB waiting at most.
        let file = BackgroundFile::create(path, &head, BATCH_BYTES, 192, "tlab-capture", "capture")?;
        Ok(Capture {
            interface,
            snaplen,
            mono_to_real_ns,
            file,
        })
    }

    /// A packet (`bytes`, an IPv4 packet) leaving direction `dir` at `t_ns`
    /// (CLOCK_MONOTONIC); ignored unless the direction is captured.
    pub fn packet(&mut self, dir: u16, t_ns: u64, bytes: &[u8]) {
        let Some(&Some(id)) = self.interface.get(dir as usize) else {
            return;
        };
        let t = (t_ns as i64 + self.mono_to_real_ns) as u64;
        let kept = &bytes[..bytes.len().min(self.snaplen as usize)];
        let mut epb = Vec::with_capacity(20 + kept.len() + 3);
        epb.extend_from_slice(&id.to_le_bytes());
        epb.extend_from_slice(&((t >> 32) as u32).to_le_bytes());
        epb.extend_from_slice(&(t as u32).to_le_bytes());
        epb.extend_from_slice(&(kept.len() as u32).to_le_bytes());
        epb.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
        epb.extend_from_slice(kept);
        block(self.file.batch(), EPB, &epb);
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

    fn u32_at(b: &[u8], o: usize) -> u32 {
        u32::from_le_bytes(b[o..o + 4].try_into().unwrap())
    }

    /// The file is a section header, one interface per captured direction (raw IPv4,
    /// the snap length, its name, nanosecond resolution), then one enhanced packet block
    /// per captured packet with the wall-clock time split high/low, the kept and the
    /// original length and the bytes padded to 4; packets of other directions are not
    /// written. Every block's two length fields agree.
    #[test]
    fn blocks_by_hand() {
        let path = std::env::temp_dir().join(format!("tlab-capture-{}.pcapng", std::process::id()));
        let captured = [(2usize, "l.forward".to_string())];
        let mut c = Capture::create(&path, 6, &captured, 3, 1_000).unwrap();
        c.packet(0, 5, &[9; 40]);
        c.packet(2, (7u64 << 32) + 10, &[1, 2, 3, 4, 5, 6, 7, 8]);
        c.packet(2, 20, &[0xAA; 3]);
        c.close().unwrap();
        let b = std::fs::read(&path).unwrap();
        std::fs::remove_file(&path).unwrap();

        let mut blocks = Vec::new();
        let mut o = 0;
        while o < b.len() {
            let (kind, len) = (u32_at(&b, o), u32_at(&b, o + 4) as usize);
            assert_eq!(u32_at(&b, o + len - 4) as usize, len, "trailing length at {o}");
            blocks.push((kind, b[o + 8..o + len - 4].to_vec()));
            o += len;
        }
        assert_eq!(o, b.len());
        let kinds: Vec<u32> = blocks.iter().map(|b| b.0).collect();
        assert_eq!(kinds, vec![SHB, IDB, EPB, EPB]);
        assert_eq!(u32_at(&blocks[0].1, 0), BYTE_ORDER_MAGIC);
        let idb = &blocks[1].1;
        assert_eq!(u16::from_le_bytes([idb[0], idb[1]]), LINKTYPE_IPV4);
        assert_eq!(u32_at(idb, 4), 6);
        // if_name (code 2, length 9, "l.forward" padded to 12), if_tsresol 9, end.
        assert_eq!(&idb[8..12], &[2, 0, 9, 0]);
        assert_eq!(&idb[12..21], b"l.forward");
        assert_eq!(&idb[24..29], &[9, 0, 1, 0, 9]);
        assert_eq!(&idb[32..36], &[0, 0, 0, 0]);
        let epb = &blocks[2].1;
        let t = (7u64 << 32) + 10 + 1_000;
        assert_eq!(
            (
                u32_at(epb, 0),
                u32_at(epb, 4),
                u32_at(epb, 8),
                u32_at(epb, 12),
                u32_at(epb, 16)
            ),
            (0, (t >> 32) as u32, t as u32, 6, 8)
        );
        assert_eq!(&epb[20..], &[1, 2, 3, 4, 5, 6, 0, 0]);
        let epb = &blocks[3].1;
        assert_eq!((u32_at(epb, 12), u32_at(epb, 16)), (3, 3));
        assert_eq!(&epb[20..], &[0xAA, 0xAA, 0xAA, 0]);
    }
}
