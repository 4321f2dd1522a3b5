//! A read-only view of the IPv4 header fields the engine needs: routing (destination)
//! and the flow key written to the log.

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FlowKey {
    pub src: u32,
    pub dst: u32,
    pub sport: u16,
    pub dport: u16,
    pub proto: u8,
    pub tcp_seq: u32,
}

/// Parses the flow key of an IPv4 packet; `None` if it is not a well-formed IPv4 packet.
pub fn flow_key(pkt: &[u8]) -> Option<FlowKey> {
    if pkt.len() < 20 || pkt[0] >> 4 != 4 {
        return None;
    }
    let ihl = ((pkt[0] & 0x0f) as usize) * 4;
    if ihl < 20 || pkt.len() < ihl {
        return None;
    }
    let be32 = |o: usize| u32::from_be_bytes([pkt[o], pkt[o + 1], pkt[o + 2], pkt[o + 3]]);
    let be16 = |o: usize| u16::from_be_bytes([pkt[o], pkt[o + 1]]);
    let mut key = FlowKey { src: be32(12), dst: be32(16), proto: pkt[9], ..FlowKey::default() };
    // Ports exist only in the first fragment.
    let first_fragment = be16(6) & 0x1fff == 0;
    let l4 = &pkt[ihl..];
    if first_fragment && (key.proto == 6 || key.proto == 17) && l4.len() >= 4 {
        key.sport = u16::from_be_bytes([l4[0], l4[1]]);
        key.dport = u16::from_be_bytes([l4[2], l4[3]]);
        if key.proto == 6 && l4.len() >= 8 {
            key.tcp_seq = u32::from_be_bytes([l4[4], l4[5], l4[6], l4[7]]);
        }
    }
    Some(key)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    #[test]
    fn parses_udp_header() {
        let mut p = vec![0u8; 28];
        p[0] = 0x45;
        p[9] = 17;
        p[12..16].copy_from_slice(&[198, 18, 0, 1]);
        p[16..20].copy_from_slice(&[198, 18, 0, 2]);
        p[20..22].copy_from_slice(&5000u16.to_be_bytes());
        p[22..24].copy_from_slice(&6000u16.to_be_bytes());
        let k = flow_key(&p).unwrap();
        assert_eq!(Ipv4Addr::from(k.dst), Ipv4Addr::new(198, 18, 0, 2));
        assert_eq!((k.sport, k.dport, k.proto, k.tcp_seq), (5000, 6000, 17, 0));
    }

    #[test]
    fn tcp_sequence_number_and_non_first_fragment() {
        let mut p = vec![0u8; 40];
        p[0] = 0x45;
        p[9] = 6;
        p[24..28].copy_from_slice(&0xdeadbeefu32.to_be_bytes());
        assert_eq!(flow_key(&p).unwrap().tcp_seq, 0xdeadbeef);
        p[6] = 0x00;
        p[7] = 0x10; // fragment offset 16: no transport header here
        assert_eq!(flow_key(&p).unwrap().sport, 0);
    }

    #[test]
    fn rejects_ipv6_and_short() {
        assert!(flow_key(&[0x60; 40]).is_none());
        assert!(flow_key(&[0x45; 10]).is_none());
    }
}
