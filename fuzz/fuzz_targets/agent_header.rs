//! Every decoder of the agents' wire formats on arbitrary bytes, as a server meets them
//! from the network. Each must answer with a message or a typed error, never panic. Every
//! format is canonical (reserved bytes 0, the QUIC message-sender byte 1 or 2), so a
//! message a decoder accepts must re-encode to exactly the bytes it came from; a refusal
//! for length must name a length that is really missing, and any other refusal needs the
//! whole message to be there.
#![no_main]

use agent_proto::wire::object::{self, ObjectRequest, UploadReply};
use agent_proto::wire::records::{self, RecordsRequest};
use agent_proto::wire::request::{Mode, Request, Transport};
use agent_proto::wire::stamp::{self, ProbeStamp, Stamp};
use agent_proto::wire::Error;
use libfuzzer_sys::fuzz_target;

fn check_refusal(e: Error, data: &[u8], len: usize) {
    match e {
        Error::Truncated { needed, got } => assert!(needed == len && got == data.len() && got < needed, "{e:?}"),
        _ => assert!(data.len() >= len, "{e:?} on {} of {len} bytes", data.len()),
    }
    let _ = e.to_string();
}

fuzz_target!(|data: &[u8]| {
    for t in [Transport::Tcp, Transport::Quic] {
        let len = t.request_len();
        match Request::decode(t, data) {
            Ok(r) => {
                assert_eq!(
                    r.encode(t).expect("a decoded request encodes"),
                    &data[..len],
                    "{t:?} {r:?}"
                );
                if t == Transport::Tcp {
                    assert!(r.mode != Mode::Messages && !r.client_sends_messages);
                    assert_eq!((r.message_size, r.message_interval_ns, r.streams), (0, 0, 1));
                }
                if let Err(e) = r.validate() {
                    assert!(matches!(e, Error::Invalid(_)), "{e:?}");
                }
                let mut longer = data.to_vec();
                longer.push(0xa5);
                r.emit(t, &mut longer).expect("room for the request");
                assert_eq!(
                    longer[len..],
                    [&data[len..], &[0xa5][..]].concat(),
                    "emit wrote past the request"
                );
            }
            Err(e) => check_refusal(e, data, len),
        }
    }

    match ObjectRequest::decode(data) {
        Ok(o) => assert_eq!(o.encode(), data[..object::LEN]),
        Err(e) => check_refusal(e, data, object::LEN),
    }
    match RecordsRequest::decode(data) {
        Ok(r) => {
            assert_eq!(r.encode(), data[..records::LEN]);
            if let Err(e) = r.validate() {
                assert!(matches!(e, Error::Invalid(_)), "{e:?}");
            }
        }
        Err(e) => check_refusal(e, data, records::LEN),
    }
    match UploadReply::decode(data) {
        Ok(u) => assert_eq!(u.encode(), data[..object::LEN]),
        Err(e) => check_refusal(e, data, object::LEN),
    }

    let mut copy = data.to_vec();
    match Stamp::decode(data) {
        Ok(s) => {
            s.emit(&mut copy).expect("room for the stamp");
            assert_eq!(copy, data);
        }
        Err(e) => {
            check_refusal(e, data, stamp::LEN);
            assert!(Stamp { seq: 1, send_ns: 2 }.emit(&mut copy).is_err());
        }
    }
    match ProbeStamp::decode(data) {
        Ok(p) => {
            p.emit(&mut copy).expect("room for the stamp");
            assert_eq!(copy, data);
            stamp::set_echo_ns(&mut copy, !p.echo_ns).expect("room for the echo time");
            assert_eq!(
                ProbeStamp::decode(&copy),
                Ok(ProbeStamp {
                    echo_ns: !p.echo_ns,
                    ..p
                })
            );
            assert_eq!(copy[stamp::PROBE_LEN..], data[stamp::PROBE_LEN..]);
        }
        Err(e) => {
            check_refusal(e, data, stamp::PROBE_LEN);
            assert!(stamp::set_echo_ns(&mut copy, 1).is_err());
            assert_eq!(copy, data, "a refused echo time wrote anyway");
        }
    }
});
