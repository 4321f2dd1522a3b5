//! The wire formats through the library target, as the fuzz target reaches them: every
//! decoder answers any input without panicking, and what it accepts re-encodes to the
//! same bytes.

use agent_proto::wire::object::{self, ObjectRequest, UploadReply};
use agent_proto::wire::request::{self, Mode, Request, Transport};
use agent_proto::wire::stamp::{self, ProbeStamp, Stamp};
use agent_proto::wire::Error;

/// xorshift64*: deterministic inputs without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn byte(&mut self) -> u8 {
        (self.next() >> 56) as u8
    }
}

/// Decodes `buf` with every decoder; each accepted message must re-encode to its bytes.
/// Returns how many requests were accepted.
fn check_all(buf: &[u8]) -> usize {
    let mut accepted = 0;
    for t in [Transport::Tcp, Transport::Quic] {
        if let Ok(r) = Request::decode(t, buf) {
            assert_eq!(r.encode(t).unwrap(), &buf[..t.request_len()], "{t:?} request {r:?}");
            accepted += 1;
        }
    }
    if let Ok(o) = ObjectRequest::decode(buf) {
        assert_eq!(o.encode(), buf[..object::LEN]);
    }
    if let Ok(u) = UploadReply::decode(buf) {
        assert_eq!(u.encode(), buf[..object::LEN]);
    }
    if let Ok(s) = Stamp::decode(buf) {
        let mut b = buf.to_vec();
        s.emit(&mut b).unwrap();
        assert_eq!(b, buf);
    }
    if let Ok(p) = ProbeStamp::decode(buf) {
        let mut b = buf.to_vec();
        p.emit(&mut b).unwrap();
        assert_eq!(b, buf);
    }
    accepted
}

#[test]
fn random_bytes_never_panic_and_accepted_ones_roundtrip() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut accepted = 0;
    for i in 0..200_000 {
        let len = (rng.next() % 80) as usize;
        let mut buf: Vec<u8> = (0..len).map(|_| rng.byte()).collect();
        // Mostly valid prefixes, so the checks past the magic are reached too.
        if i % 2 == 0 && len >= 8 {
            let t = if i % 4 == 0 { Transport::Tcp } else { Transport::Quic };
            buf[..4].copy_from_slice(&t.magic());
            buf[4] = t.version();
            buf[5] = 1 + rng.byte() % 4;
            buf[6] = rng.byte() % 3;
            buf[7] = if rng.byte() < 16 { 1 } else { 0 };
        }
        accepted += check_all(&buf);
    }
    assert!(
        accepted > 1000,
        "only {accepted} requests accepted: the checks past the framing went untested"
    );
}

#[test]
fn every_prefix_of_a_valid_request_is_refused_as_truncated() {
    let r = Request {
        bytes: 5,
        ..Request::new(Mode::Upload)
    };
    for t in [Transport::Tcp, Transport::Quic] {
        let b = r.encode(t).unwrap();
        for n in 0..b.len() {
            assert_eq!(
                Request::decode(t, &b[..n]),
                Err(Error::Truncated {
                    needed: t.request_len(),
                    got: n
                })
            );
        }
        assert_eq!(Request::decode(t, &b), Ok(r));
    }
    assert_eq!(request::TCP_LEN, 40);
    assert_eq!(request::QUIC_LEN, 64);
    assert_eq!((stamp::LEN, stamp::PROBE_LEN, object::LEN), (16, 24, 8));
}
