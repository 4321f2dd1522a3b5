//! Mahimahi trace parsing, and the trace-driven link it configures.
//!
//! Input: trace text, optionally followed by a NUL byte and arrivals, 4 bytes each (gap
//! since the previous arrival in µs, then size in bytes, both u16 little-endian), so a
//! plain trace file is a valid seed. The parser must refuse bad text with an error, never
//! panic; a trace it accepts must be valid, survive a round trip through its text form,
//! and drive a link that hands packets out in order, never before they arrive, and only
//! at delivery opportunities of the trace (or, past the end of u64 time, at its end).
#![no_main]

use libfuzzer_sys::fuzz_target;
use linkem::queue::QueueLimit;
use linkem::rate::{parse_mahimahi_trace, validate_trace, RateQueue};
use linkem::{Packet, Stage};

const NS_PER_MS: u64 = 1_000_000;
const NS_PER_US: u64 = 1_000;
/// Enough arrivals to fill the queue and wrap a short trace several times.
const MAX_ARRIVALS: usize = 512;

fn is_opportunity(trace_ms: &[u64], t_ns: u64) -> bool {
    if !t_ns.is_multiple_of(NS_PER_MS) {
        return false;
    }
    let ms = t_ns / NS_PER_MS;
    let period = *trace_ms.last().unwrap();
    let phase = ms % period;
    // Opportunity o of period k is at k·period + o, so a period's last one (o = period)
    // falls on a multiple of the period too.
    trace_ms.binary_search(&phase).is_ok() || (phase == 0 && ms >= period)
}

fuzz_target!(|data: &[u8]| {
    let (text, rest) = match data.iter().position(|&b| b == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[][..]),
    };
    let Ok(text) = std::str::from_utf8(text) else {
        return;
    };
    let Ok(trace) = parse_mahimahi_trace(text) else {
        return;
    };

    assert!(
        validate_trace(&trace).is_ok(),
        "parser accepted an invalid trace {trace:?}"
    );
    let written: String = trace.iter().map(|ms| format!("{ms}\n")).collect();
    assert_eq!(parse_mahimahi_trace(&written).as_ref(), Ok(&trace), "round trip");

    let mut link = RateQueue::trace(trace.clone(), QueueLimit::Packets(64)).expect("a parsed trace builds a link");
    let mut at = 0u64;
    let mut last_out: Option<(u64, u64)> = None;
    let mut check = |id: u64, due: u64, arrived: &[u64]| {
        if let Some((prev_id, prev_due)) = last_out {
            assert!(
                id > prev_id && due >= prev_due,
                "{id} (due {due}) handed out after {prev_id} (due {prev_due})"
            );
        }
        assert!(
            due >= arrived[id as usize],
            "{id} due at {due} before its arrival {}",
            arrived[id as usize]
        );
        // Opportunities beyond u64 nanoseconds are all at the saturated end of time.
        assert!(
            due == u64::MAX || is_opportunity(&trace, due),
            "{id} due at {due} ns, not an opportunity of {trace:?}"
        );
        last_out = Some((id, due));
    };
    let mut arrived = Vec::new();
    for (id, chunk) in rest.chunks_exact(4).take(MAX_ARRIVALS).enumerate() {
        at += u64::from(u16::from_le_bytes([chunk[0], chunk[1]])) * NS_PER_US;
        let size = u32::from(u16::from_le_bytes([chunk[2], chunk[3]]));
        while let Some((p, due)) = link.dequeue(at) {
            check(p.id, due, &arrived);
        }
        arrived.push(at);
        let _ = link.enqueue(Packet::new(id as u64, size, ()), at);
    }
    while let Some((p, due)) = link.dequeue(u64::MAX) {
        check(p.id, due, &arrived);
    }
    assert!(link.is_empty());
});
