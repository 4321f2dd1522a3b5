//! One-way delay of a QUIC connection's data direction, measured as uTP measures it
//! (BEP 29's `timestamp` and `timestamp_difference`), for a controller that steers by it
//! (LEDBAT with `delay_signal = "one-way"`). quinn's controller interface gives only RTTs
//! and quinn-proto 0.11 has no receive-timestamp extension, so the timestamps travel in
//! QUIC DATAGRAM frames, which quinn coalesces into the same packets as stream data: they
//! cross the same queues as the data they measure.
//!
//! - The payload's sender, while it sends, **stamps**: a datagram with a sequence number
//!   and its clock's time ([`Message::Stamp`]), one per [`STAMP_BYTES`] of data
//!   acknowledged, at most one per [`STAMP_INTERVAL`] ([`OneWay::poll_stamp`]).
//! - Every end **echoes** each stamp it receives at once, adding its own clock's time of
//!   arrival ([`Message::Echo`]).
//! - Each echo back at the sender is one sample: arrival − departure, two different
//!   clocks ([`OneWay::on_datagram`] returns it; the driver hands it to the controller,
//!   see `cc::Probe::deliver_one_way`). An offset between the clocks is in every sample
//!   and cancels in LEDBAT's queueing delay (sample − minimum sample). The echo's own trip
//!   back is not in the sample: queueing on the reverse path is not measured.
//!
//! Departure, not stamping: a stamp handed to QUIC while the congestion window is full
//! waits for room (up to a round trip while the window is a few packets), and that wait
//! is the sender's, not the path's. The driver reports how many DATAGRAM frames QUIC has
//! put into packets so far ([`OneWay::observe_sent`]; quinn counts them in its frame
//! statistics, and sends them in order), so the sender knows when each stamp left and
//! measures from then. A stamp seen to have left by an observation left after the
//! previous one (or after it was stamped, if later): that earlier bound is its departure,
//! so a sample only ever errs high, by less than the time between observations, and the
//! base (a minimum) stays the path's. The stamp's own time is the fallback if its echo
//! comes back before its departure was observed. The agent observes every
//! [`STAMP_INTERVAL`] (1 ms, more when the machine is busy); the simulator just before
//! and just after each step's transmissions (exactly). The receiver's time is when its application reads the
//! datagram, after the packet's processing (errs high by that too).
//!
//! Sans-IO: times are arguments (CLOCK_MONOTONIC in the agent, virtual time in the
//! simulator), and nothing here sends or receives.

use std::collections::VecDeque;

use serde::Serialize;

use crate::stats::{self, Scaled};

/// Nanoseconds on the caller's clock.
pub type Nanos = u64;

/// First byte of a stamp datagram.
pub const STAMP_TAG: u8 = 0xd1;
/// First byte of an echo datagram.
pub const ECHO_TAG: u8 = 0xd2;
/// Tag, sequence number, send time (big-endian u64s).
pub const STAMP_LEN: usize = 17;
/// Tag, sequence number, send time, receive time.
pub const ECHO_LEN: usize = 25;

/// A stamp is due once this many more bytes were acknowledged since the last one (four
/// full-size packets: about one sample per two ACK frames, ≈ 0.4 % of the data's bytes).
pub const STAMP_BYTES: u64 = 4 * 1200;
/// …and at most one stamp per this interval (1 ms: 1000 samples a second at most).
pub const STAMP_INTERVAL: Nanos = 1_000_000;

/// A summary refuses a one-way flow whose peer echoed none of at least this many stamps
/// (fewer may all still be on their way when a short transfer ends).
pub const MIN_STAMPS_FOR_VERDICT: u64 = 8;

/// The two datagrams of the exchange.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Message {
    Stamp { seq: u64, send_ns: Nanos },
    Echo { seq: u64, send_ns: Nanos, recv_ns: Nanos },
}

impl Message {
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(ECHO_LEN);
        match *self {
            Message::Stamp { seq, send_ns } => {
                out.push(STAMP_TAG);
                out.extend_from_slice(&seq.to_be_bytes());
                out.extend_from_slice(&send_ns.to_be_bytes());
            }
            Message::Echo { seq, send_ns, recv_ns } => {
                out.push(ECHO_TAG);
                out.extend_from_slice(&seq.to_be_bytes());
                out.extend_from_slice(&send_ns.to_be_bytes());
                out.extend_from_slice(&recv_ns.to_be_bytes());
            }
        }
        out
    }

    pub fn decode(b: &[u8]) -> Result<Message, String> {
        let word = |i: usize| u64::from_be_bytes(b[1 + 8 * i..9 + 8 * i].try_into().expect("8 bytes"));
        match (b.first(), b.len()) {
            (Some(&STAMP_TAG), STAMP_LEN) => Ok(Message::Stamp {
                seq: word(0),
                send_ns: word(1),
            }),
            (Some(&ECHO_TAG), ECHO_LEN) => Ok(Message::Echo {
                seq: word(0),
                send_ns: word(1),
                recv_ns: word(2),
            }),
            (Some(&tag), n) => Err(format!(
                "datagram of {n} bytes with tag {tag:#04x}: not a {STAMP_LEN}-byte stamp ({STAMP_TAG:#04x}) or a {ECHO_LEN}-byte echo ({ECHO_TAG:#04x})"
            )),
            (None, _) => Err("empty datagram".into()),
        }
    }

    /// An echo's sample: receiver's clock at arrival − sender's clock at stamping
    /// (wrapping, so clocks far apart still give a consistent, possibly negative, value).
    pub fn delay(send_ns: Nanos, recv_ns: Nanos) -> i64 {
        recv_ns.wrapping_sub(send_ns) as i64
    }
}

/// What a received datagram asks of the driver.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reaction {
    /// Send this echo back.
    Reply(Vec<u8>),
    /// A one-way delay sample for the controller.
    Sample(i64),
    /// Not ours (counted as malformed) or not expected (an echo while not stamping).
    Ignore,
}

/// One end of a connection's exchange: its stamping (if it sends the payload) and its
/// echoing (always).
#[derive(Debug, Default)]
pub struct OneWay {
    stamping: bool,
    seq: u64,
    /// (time, bytes acknowledged) of the last stamp.
    last: Option<(Nanos, u64)>,
    stamps_sent: u64,
    echoes_received: u64,
    stamps_echoed: u64,
    malformed: u64,
    /// The first refusal of the transport to send one of ours (e.g. the peer takes no
    /// DATAGRAM frames).
    send_error: Option<String>,
    /// Every sample, for the summary.
    delays: Vec<i64>,
    /// Stamps handed to QUIC and not yet seen leaving: (seq, stamp time), oldest first.
    queued: VecDeque<(u64, Nanos)>,
    /// Departure times of the latest stamps seen leaving: (seq, time), oldest first.
    departed: VecDeque<(u64, Nanos)>,
    /// DATAGRAM frames this end had sent when last observed, and when that was.
    frames_seen: u64,
    last_observed: Nanos,
    /// How long each stamp waited in QUIC before leaving (departure − stamp), for the summary.
    waits: Vec<f64>,
    /// Samples measured from the stamp's time (departure not yet observed).
    from_stamp_time: u64,
}

/// Departures kept for echoes still to come (a stamp's echo is ~1 RTT behind it; at one
/// stamp per ms this covers 4 s).
const DEPARTURES_KEPT: usize = 4096;

impl OneWay {
    /// This end sends the payload and its controller wants one-way samples: stamp from now on.
    pub fn start_stamping(&mut self) {
        self.stamping = true;
    }

    pub fn stamping(&self) -> bool {
        self.stamping
    }

    /// A stamp to send now, if one is due: the first at once, then each once
    /// [`STAMP_BYTES`] more were acknowledged (`bytes_acked`, cumulative) and
    /// [`STAMP_INTERVAL`] has passed since the last.
    pub fn poll_stamp(&mut self, now: Nanos, bytes_acked: u64) -> Option<Vec<u8>> {
        if !self.stamping {
            return None;
        }
        if let Some((t, acked)) = self.last {
            if now.saturating_sub(t) < STAMP_INTERVAL || bytes_acked.saturating_sub(acked) < STAMP_BYTES {
                return None;
            }
        }
        self.last = Some((now, bytes_acked));
        let m = Message::Stamp {
            seq: self.seq,
            send_ns: now,
        };
        self.queued.push_back((self.seq, now));
        self.seq += 1;
        self.stamps_sent += 1;
        Some(m.encode())
    }

    /// The transport has put `frames_sent` DATAGRAM frames into packets so far (its count
    /// since the connection began), observed at `now`: the stamps among them that left
    /// since the last observation left after it (or after their stamping, if later), which
    /// is taken as their departure. Only a stamping end's count maps onto
    /// its stamps (its peer does not stamp, so it sends no echoes); an end that also
    /// echoed is not corrected.
    pub fn observe_sent(&mut self, now: Nanos, frames_sent: u64) {
        let new = frames_sent.saturating_sub(self.frames_seen);
        let since = std::mem::replace(&mut self.last_observed, now);
        self.frames_seen = frames_sent;
        if !self.stamping || self.stamps_echoed > 0 {
            return;
        }
        for _ in 0..new {
            let Some((seq, stamped)) = self.queued.pop_front() else {
                break;
            };
            let left = stamped.max(since);
            self.waits.push((left - stamped) as f64);
            if self.departed.len() == DEPARTURES_KEPT {
                self.departed.pop_front();
            }
            self.departed.push_back((seq, left));
        }
    }

    /// A datagram that arrived at `now` (this end's clock).
    pub fn on_datagram(&mut self, now: Nanos, data: &[u8]) -> Reaction {
        match Message::decode(data) {
            Ok(Message::Stamp { seq, send_ns }) => {
                self.stamps_echoed += 1;
                Reaction::Reply(
                    Message::Echo {
                        seq,
                        send_ns,
                        recv_ns: now,
                    }
                    .encode(),
                )
            }
            Ok(Message::Echo { seq, send_ns, recv_ns }) if self.stamping => {
                self.echoes_received += 1;
                let left = self.departed.iter().rev().find(|&&(s, _)| s == seq).map(|&(_, t)| t);
                if left.is_none() {
                    self.from_stamp_time += 1;
                }
                let d = Message::delay(left.unwrap_or(send_ns), recv_ns);
                self.delays.push(d);
                Reaction::Sample(d)
            }
            Ok(Message::Echo { .. }) => Reaction::Ignore,
            Err(_) => {
                self.malformed += 1;
                Reaction::Ignore
            }
        }
    }

    /// The transport refused to send a stamp or an echo (the first reason is kept).
    pub fn note_send_error(&mut self, e: impl std::fmt::Display) {
        self.send_error.get_or_insert_with(|| e.to_string());
    }

    /// The summary's `one_way_delay` object.
    pub fn summary(&self) -> Summary {
        let min = self.delays.iter().copied().min();
        let queueing: Vec<f64> = min
            .map(|m| self.delays.iter().map(|&d| (d - m) as f64).collect())
            .unwrap_or_default();
        Summary {
            stamping: self.stamping,
            stamps_sent: self.stamps_sent,
            echoes_received: self.echoes_received,
            stamps_echoed: self.stamps_echoed,
            malformed: self.malformed,
            send_error: self.send_error.clone(),
            stamp_wait: stats::scaled(&self.waits, 1e6, "ms"),
            from_stamp_time: self.from_stamp_time,
            queueing_delay: stats::scaled(&queueing, 1e6, "ms"),
        }
    }

    /// Why this end's one-way signal failed, if it did: it stamped at least
    /// [`MIN_STAMPS_FOR_VERDICT`] times (or could not send its stamps at all) and no echo
    /// came back.
    pub fn failure(&self) -> Option<String> {
        if !self.stamping || self.echoes_received > 0 {
            return None;
        }
        let why = match &self.send_error {
            Some(e) => format!("the timestamps could not be sent ({e})"),
            None if self.stamps_sent >= MIN_STAMPS_FOR_VERDICT => {
                format!("the peer echoed none of the {} timestamps sent", self.stamps_sent)
            }
            None => return None,
        };
        Some(format!(
            "cc_params.delay_signal = one-way: {why}, so the controller had no delay signal (it never falls back to the RTT)"
        ))
    }
}

/// One end's exchange in the summary (`quic.one_way_delay`).
#[derive(Debug, Serialize)]
pub struct Summary {
    /// This end sent the payload and stamped it.
    pub stamping: bool,
    pub stamps_sent: u64,
    /// Samples: echoes of this end's stamps that came back.
    pub echoes_received: u64,
    /// Stamps from the peer this end echoed.
    pub stamps_echoed: u64,
    /// Datagrams that were neither a stamp nor an echo.
    pub malformed: u64,
    /// Why the transport refused to send a stamp or echo, if it ever did.
    pub send_error: Option<String>,
    /// How long stamps waited in QUIC for room in the congestion window (departure −
    /// stamp time), in ms: what the samples no longer include.
    pub stamp_wait: Option<Scaled>,
    /// Samples measured from the stamp's time because its departure had not been observed
    /// when the echo came back.
    pub from_stamp_time: u64,
    /// Each sample minus the smallest: the data direction's queueing delay (what LEDBAT
    /// sees, up to its base's bucketed history), in ms.
    pub queueing_delay: Option<Scaled>,
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Nanos = 1_000_000;

    #[test]
    fn messages_round_trip_and_bad_ones_are_named() {
        for m in [
            Message::Stamp { seq: 7, send_ns: 123 },
            Message::Echo {
                seq: u64::MAX,
                send_ns: 1,
                recv_ns: 2,
            },
        ] {
            assert_eq!(Message::decode(&m.encode()), Ok(m));
        }
        assert_eq!(Message::Stamp { seq: 0, send_ns: 0 }.encode().len(), STAMP_LEN);
        let e = Message::decode(&[STAMP_TAG, 1, 2]).unwrap_err();
        assert!(e.contains("datagram of 3 bytes with tag 0xd1"), "{e}");
        assert_eq!(Message::decode(&[]), Err("empty datagram".into()));
    }

    #[test]
    fn stamps_follow_acknowledged_bytes_and_the_interval() {
        let mut w = OneWay::default();
        assert_eq!(w.poll_stamp(0, 0), None, "not stamping yet");
        w.start_stamping();
        let first = w.poll_stamp(10 * MS, 0).expect("the first at once");
        assert_eq!(
            Message::decode(&first),
            Ok(Message::Stamp {
                seq: 0,
                send_ns: 10 * MS
            })
        );
        // Enough bytes but too soon; late enough but too few bytes; then both.
        assert_eq!(w.poll_stamp(10 * MS + MS / 2, STAMP_BYTES), None);
        assert_eq!(w.poll_stamp(20 * MS, STAMP_BYTES - 1), None);
        let second = w.poll_stamp(11 * MS, STAMP_BYTES).expect("1 ms and 4 packets later");
        assert_eq!(
            Message::decode(&second),
            Ok(Message::Stamp {
                seq: 1,
                send_ns: 11 * MS
            })
        );
        assert_eq!(w.summary().stamps_sent, 2);
    }

    /// Sender clock S, receiver clock R = S − 3 s. The data direction's one-way delay is
    /// 20 ms, then 50 ms (a queue of 30 ms); the echoes come back however late: the
    /// samples are R-arrival − S-stamp, the queueing delay 0 then 30 ms.
    #[test]
    fn echo_gives_the_data_directions_delay_whatever_the_clocks_and_the_way_back() {
        const OFFSET: Nanos = 3_000_000_000;
        let (mut sender, mut receiver) = (OneWay::default(), OneWay::default());
        sender.start_stamping();
        let mut samples = Vec::new();
        for (i, (owd, way_back)) in [(20 * MS, 20 * MS), (50 * MS, 900 * MS)].into_iter().enumerate() {
            let s = 10_000 * MS + i as Nanos * 5 * MS;
            let stamp = sender.poll_stamp(s, i as u64 * STAMP_BYTES).expect("due");
            let Reaction::Reply(echo) = receiver.on_datagram(s + owd - OFFSET, &stamp) else {
                panic!("a stamp is echoed")
            };
            match sender.on_datagram(s + owd + way_back, &echo) {
                Reaction::Sample(d) => samples.push(d),
                r => panic!("an echo is a sample, got {r:?}"),
            }
        }
        let off = OFFSET as i64;
        assert_eq!(samples, vec![(20 * MS) as i64 - off, (50 * MS) as i64 - off]);
        let s = sender.summary();
        assert_eq!((s.stamps_sent, s.echoes_received, s.stamps_echoed), (2, 2, 0));
        let q = s.queueing_delay.expect("two samples").describe;
        assert_eq!((q.min, q.max), (0.0, 30.0 * MS as f64));
        assert_eq!(receiver.summary().stamps_echoed, 2);
        assert!(sender.failure().is_none());
    }

    /// Two stamps wait in QUIC (the window is full) and are seen to have left at the
    /// observation of 30 ms (the one before was at 29 ms): their departure is 29 ms, 29
    /// and 24 ms after they were stamped. They reach the receiver at 49 and 50 ms: samples
    /// 20 and 21 ms (the second errs high by < 1 ms), not 49 and 45. A third stamp's echo
    /// comes back before its departure was observed: measured from its stamp.
    #[test]
    fn samples_run_from_departure_not_from_stamping() {
        let (mut sender, mut receiver) = (OneWay::default(), OneWay::default());
        sender.start_stamping();
        let a = sender.poll_stamp(0, 0).unwrap();
        let b = sender.poll_stamp(5 * MS, STAMP_BYTES).unwrap();
        sender.observe_sent(29 * MS, 0);
        sender.observe_sent(30 * MS, 2);
        let c = sender.poll_stamp(40 * MS, 2 * STAMP_BYTES).unwrap();
        let mut samples = Vec::new();
        for (stamp, arrival) in [(a, 49 * MS), (b, 50 * MS), (c, 60 * MS)] {
            let Reaction::Reply(echo) = receiver.on_datagram(arrival, &stamp) else {
                panic!("echoed")
            };
            let Reaction::Sample(d) = sender.on_datagram(arrival + 20 * MS, &echo) else {
                panic!("a sample")
            };
            samples.push(d);
        }
        assert_eq!(samples, vec![(20 * MS) as i64, (21 * MS) as i64, (20 * MS) as i64]);
        let s = sender.summary();
        let w = s.stamp_wait.expect("two waits").describe;
        assert_eq!((w.count, w.min, w.max), (2, (24 * MS) as f64, (29 * MS) as f64));
        assert_eq!(s.from_stamp_time, 1);
        // The third is seen leaving at 45 ms, the previous observation at 30: stamped at
        // 40, its departure is 40 (wait 0), the later of the two.
        sender.observe_sent(45 * MS, 3);
        let w = sender.summary().stamp_wait.unwrap().describe;
        assert_eq!((w.count, w.min), (3, 0.0));
    }

    #[test]
    fn no_echo_is_a_failure_once_enough_stamps_went_out() {
        let mut w = OneWay::default();
        w.start_stamping();
        for i in 0..MIN_STAMPS_FOR_VERDICT {
            w.poll_stamp(i * 10 * MS, i * STAMP_BYTES).expect("due");
            if i + 1 < MIN_STAMPS_FOR_VERDICT {
                assert_eq!(w.failure(), None);
            }
        }
        let e = w.failure().expect("8 stamps, no echo");
        assert!(e.contains("echoed none of the 8 timestamps"), "{e}");
        // An end that does not stamp never fails, and ignores stray echoes and junk.
        let mut r = OneWay::default();
        let echo = Message::Echo {
            seq: 0,
            send_ns: 0,
            recv_ns: 1,
        }
        .encode();
        assert_eq!(r.on_datagram(0, &echo), Reaction::Ignore);
        assert_eq!(r.on_datagram(0, b"junk"), Reaction::Ignore);
        assert_eq!((r.summary().malformed, r.failure()), (1, None));
    }
}
