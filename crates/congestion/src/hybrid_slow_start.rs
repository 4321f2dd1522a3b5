//! Chromium QUIC's hybrid slow start: HyStart's delay detector without its ACK-train
//! detector, as gQUIC's `TcpCubicSender` used it to leave slow start before a queue
//! overflows (Chromium's `hybrid_slow_start.cc`, 2016–2017: the constants below).
//!
//! A round starts at the first ACK frame after the previous round ended and lasts until
//! a packet sent at or after the round's start is acknowledged. Its first eight ACK frames'
//! RTT samples give the round's minimum; slow start ends when that minimum exceeds the
//! path's minimum RTT by min_rtt/8, clamped to 4–16 ms, once the window is at least 16
//! packets. Chromium counts rounds in packet numbers; the controller interface gives send
//! times, which order packets the same way.

use crate::Nanos;

/// No exit below this window, in Chromium's default TCP MSS (packets of `CHROMIUM_MSS`).
const LOW_WINDOW_PACKETS: u64 = 16;
/// Chromium divides its byte window by kDefaultTCPMSS to count packets.
pub(crate) const CHROMIUM_MSS: u64 = 1460;
/// RTT samples (ACK frames) of a round that give its minimum.
const MIN_SAMPLES: u32 = 8;
/// The RTT increase that ends slow start: min_rtt >> 3, clamped.
const DELAY_FACTOR_SHIFT: u32 = 3;
const MIN_THRESHOLD: Nanos = 4_000_000;
const MAX_THRESHOLD: Nanos = 16_000_000;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct HybridSlowStart {
    /// Send time of the last packet sent.
    last_sent: Nanos,
    /// While a round runs: the send time whose acknowledgement ends it.
    round_end: Option<Nanos>,
    samples: u32,
    round_min: Option<Nanos>,
    /// The delay increase was seen; Chromium keeps answering "exit" from then on.
    found: bool,
}

impl HybridSlowStart {
    pub(crate) fn on_sent(&mut self, time: Nanos) {
        self.last_sent = time;
    }

    /// A packet acknowledged while still in slow start (after the frame's check).
    pub(crate) fn on_acked(&mut self, sent_time: Nanos) {
        if self.round_end.is_some_and(|end| sent_time >= end) {
            self.round_end = None;
        }
    }

    /// After persistent congestion, slow start begins again with nothing found.
    pub(crate) fn restart(&mut self) {
        self.round_end = None;
        self.found = false;
    }

    /// Once per ACK frame in slow start, before its acknowledgements grow the window:
    /// whether to leave slow start now. `latest` is the frame's RTT sample, `min` the
    /// path's minimum RTT, `window_packets` the window in `CHROMIUM_MSS` packets.
    pub(crate) fn should_exit(&mut self, latest: Nanos, min: Nanos, window_packets: u64) -> bool {
        if self.round_end.is_none() {
            self.round_end = Some(self.last_sent);
            self.samples = 0;
            self.round_min = None;
        }
        if self.found {
            return true;
        }
        self.samples += 1;
        if self.samples <= MIN_SAMPLES {
            self.round_min = Some(self.round_min.map_or(latest, |m| m.min(latest)));
        }
        if self.samples == MIN_SAMPLES {
            let threshold = (min >> DELAY_FACTOR_SHIFT).clamp(MIN_THRESHOLD, MAX_THRESHOLD);
            self.found = self.round_min.is_some_and(|m| m > min + threshold);
        }
        window_packets >= LOW_WINDOW_PACKETS && self.found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Nanos = 1_000_000;

    /// Eight frames of one round with these RTTs; returns the last answer.
    fn round(h: &mut HybridSlowStart, rtts: [Nanos; 8], min: Nanos, window: u64) -> bool {
        rtts.iter().map(|&rtt| h.should_exit(rtt, min, window)).last().unwrap()
    }

    #[test]
    fn the_threshold_is_an_eighth_of_the_min_rtt_clamped_to_4_to_16_ms() {
        // min 80 ms: threshold 10 ms. A round minimum of 90 ms is not above 90; 90 ms + 1 ns is.
        for (min, at, exits) in [
            (80 * MS, 90 * MS, false),
            (80 * MS, 90 * MS + 1, true),
            // min 10 ms: 1.25 ms is raised to 4 ms.
            (10 * MS, 14 * MS, false),
            (10 * MS, 14 * MS + 1, true),
            // min 400 ms: 50 ms is cut to 16 ms.
            (400 * MS, 416 * MS, false),
            (400 * MS, 416 * MS + 1, true),
        ] {
            let mut h = HybridSlowStart::default();
            assert_eq!(round(&mut h, [at; 8], min, 16), exits, "min {min} round minimum {at}");
        }
    }

    #[test]
    fn only_the_first_eight_samples_of_a_round_count_and_the_check_is_at_the_eighth() {
        let mut h = HybridSlowStart::default();
        // Seven high samples: no verdict yet.
        for _ in 0..7 {
            assert!(!h.should_exit(50 * MS, 20 * MS, 32));
        }
        // The eighth is low: the round's minimum is 20 ms, no exit; later samples are ignored.
        assert!(!h.should_exit(20 * MS, 20 * MS, 32));
        assert!(!h.should_exit(90 * MS, 20 * MS, 32));
    }

    #[test]
    fn a_small_window_defers_the_exit_until_the_next_frame_then_it_is_kept() {
        let mut h = HybridSlowStart::default();
        assert!(!round(&mut h, [40 * MS; 8], 20 * MS, 15));
        // Found with 15 packets: the next frame answers exit whatever the window.
        assert!(h.should_exit(20 * MS, 20 * MS, 2));
        h.restart();
        assert!(!h.should_exit(40 * MS, 20 * MS, 32));
    }

    #[test]
    fn a_round_ends_when_a_packet_sent_after_its_start_is_acked() {
        let mut h = HybridSlowStart::default();
        h.on_sent(100);
        // Round 1 begins at the first frame, ending with the ack of the packet sent at 100.
        for _ in 0..8 {
            assert!(!h.should_exit(20 * MS, 20 * MS, 32));
        }
        h.on_sent(200);
        h.on_acked(99);
        // Still round 1: its eight samples are used up, a high RTT now is not counted.
        assert!(!h.should_exit(60 * MS, 20 * MS, 32));
        h.on_acked(100);
        // Round 2 (ends with the packet sent at 200): eight high samples exit.
        assert!(round(&mut h, [60 * MS; 8], 20 * MS, 32));
    }
}
