//! The engine's packet parsing on arbitrary bytes, as the forwarder meets them from a TUN
//! device. `flow_key` must answer every input with a key or a typed error, never panic,
//! and give the keys the literal-offset parser it replaced gave. On an accepted packet the
//! header lies inside the packet, the key agrees with the typed views, and ECN marking
//! (set CE, recompute the checksum) changes only the TOS and checksum bytes and leaves a
//! header whose checksum verifies.
#![no_main]

use wire::ipv4::{protocol, Ecn, Ipv4Packet, MIN_HEADER_LEN};
use wire::flow::reference::literal_offsets;
use wire::{flow_key, Error, FlowKey, TcpPacket, UdpPacket};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let key = flow_key(data);
    // The literal offsets knew no payload length (checked below).
    let without_len = key.ok().map(|k| FlowKey { payload_len: 0, ..k });
    assert_eq!(without_len, literal_offsets(data), "the views changed a key");
    let ip = Ipv4Packet::new_checked(data);
    let key = match (key, ip.as_ref()) {
        (Ok(key), Ok(_)) => key,
        (Err(e), Err(e2)) => {
            assert_eq!(&e, e2, "flow_key and Ipv4Packet::new_checked refuse differently");
            match e {
                Error::Truncated { needed, got } => assert!(got == data.len() && got < needed && needed <= 60),
                Error::NotIpv4 { version } => assert_ne!(version, 4),
                Error::BadHeaderLen { header_len } => assert!(header_len < MIN_HEADER_LEN),
                Error::BadOption { .. } => panic!("flow_key reads no TCP options"),
            }
            let _ = e.to_string();
            return;
        }
        _ => panic!("flow_key and Ipv4Packet::new_checked disagree on {data:02x?}"),
    };
    let ip = ip.unwrap();

    let header_len = ip.header_len();
    assert_eq!(ip.version(), 4);
    assert!((MIN_HEADER_LEN..=60).contains(&header_len) && header_len <= data.len());
    assert_eq!(ip.payload().len(), data.len() - header_len);
    assert!(usize::from(key.payload_len) <= ip.transport().len());
    assert_eq!(
        (key.src, key.dst, key.proto),
        (u32::from(ip.src_addr()), u32::from(ip.dst_addr()), ip.protocol())
    );
    let has_ports = ip.is_first_fragment() && matches!(ip.protocol(), protocol::TCP | protocol::UDP);
    if !has_ports {
        assert_eq!((key.sport, key.dport, key.tcp_seq), (0, 0, 0));
    }
    if key.tcp_seq != 0 {
        assert_eq!(key.proto, protocol::TCP);
    }
    // Where a whole transport header is there, its checked view reads what the key holds.
    if has_ports {
        let l4 = ip.payload();
        if ip.protocol() == protocol::TCP {
            if let Ok(t) = TcpPacket::new_checked(l4) {
                assert_eq!(
                    (t.src_port(), t.dst_port(), t.seq_number()),
                    (key.sport, key.dport, key.tcp_seq)
                );
                assert!(t.header_len() <= l4.len());
            }
        } else if let Ok(u) = UdpPacket::new_checked(l4) {
            assert_eq!((u.src_port(), u.dst_port()), (key.sport, key.dport));
        }
    }

    // ECN marking in place, as a queue will do it.
    let mut marked = data.to_vec();
    let mut p = Ipv4Packet::new_checked(&mut marked[..]).expect("same bytes, same check");
    p.set_ecn(Ecn::Ce);
    p.fill_checksum();
    assert!(p.verify_checksum());
    assert_eq!((p.dscp(), p.ecn()), (ip.dscp(), Ecn::Ce));
    let new_checksum = p.checksum();
    for (i, (a, b)) in data.iter().zip(&marked).enumerate() {
        assert!(a == b || i == 1 || i == 10 || i == 11, "byte {i} changed");
    }
    assert_eq!(flow_key(&marked), Ok(key));
    // A header that was right and already marked keeps its checksum (up to the two
    // encodings of ones'-complement zero).
    if ip.verify_checksum() && ip.ecn() == Ecn::Ce {
        let old = ip.checksum();
        assert!(
            new_checksum == old || (old, new_checksum) == (0xffff, 0),
            "{old:04x} → {new_checksum:04x}"
        );
    }
});
