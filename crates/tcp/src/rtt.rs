//! Linux's RTT estimator (`tcp_rtt_estimator`, `tcp_set_rto`): RFC 6298's smoothing in
//! fixed point (srtt × 8, mdev × 4, microseconds), with Linux's twists — a falling RTT
//! moves the deviation with gain 1/32 instead of 1/4 (so the RTO does not shrink on a
//! fast sample), the deviation used for the RTO is the largest seen over the last round
//! trip and decays by 1/4 a round, and never falls below the minimum RTO (200 ms):
//! RTO = srtt + max(4·mdev, 200 ms) in the common case.

/// `TCP_RTO_MIN`, `TCP_RTO_MAX`, `TCP_TIMEOUT_INIT` in microseconds.
pub const RTO_MIN_US: u64 = 200_000;
pub const RTO_MAX_US: u64 = 120_000_000;
pub const RTO_INITIAL_US: u64 = 1_000_000;

#[derive(Debug, Clone, Default)]
pub struct RttEstimator {
    /// Smoothed RTT × 8 (µs); 0 until the first sample.
    srtt8: u64,
    /// Mean deviation × 4 (µs).
    mdev4: u64,
    /// The largest `mdev4` in the current round.
    mdev_max4: u64,
    /// The deviation term of the RTO (µs, ≥ RTO_MIN_US).
    rttvar: u64,
    /// The round ends when this sequence (offset) is acknowledged.
    rtt_seq: u64,
    min_rtt: Option<u64>,
}

impl RttEstimator {
    /// One RTT sample `m` (µs) at an acknowledgement up to `snd_una`, `snd_nxt` being the
    /// next sequence to send.
    pub fn sample(&mut self, m: u64, snd_una: u64, snd_nxt: u64) {
        let m = m.max(1);
        if self.srtt8 == 0 {
            self.srtt8 = m << 3;
            self.mdev4 = m << 1;
            self.rttvar = self.mdev4.max(RTO_MIN_US);
            self.mdev_max4 = self.rttvar;
            self.rtt_seq = snd_nxt;
            return;
        }
        let mut srtt = self.srtt8 as i64;
        let mut e = m as i64 - (srtt >> 3);
        srtt += e;
        if e < 0 {
            e = -e - (self.mdev4 as i64 >> 2);
            if e > 0 {
                e >>= 3;
            }
        } else {
            e -= self.mdev4 as i64 >> 2;
        }
        self.mdev4 = (self.mdev4 as i64 + e) as u64;
        if self.mdev4 > self.mdev_max4 {
            self.mdev_max4 = self.mdev4;
            if self.mdev_max4 > self.rttvar {
                self.rttvar = self.mdev_max4;
            }
        }
        if snd_una > self.rtt_seq {
            if self.mdev_max4 < self.rttvar {
                self.rttvar -= (self.rttvar - self.mdev_max4) >> 2;
            }
            self.rtt_seq = snd_nxt;
            self.mdev_max4 = RTO_MIN_US;
        }
        self.srtt8 = srtt.max(1) as u64;
    }

    /// Windowed minimum RTT (Linux keeps a 5-minute window; runs here are shorter).
    pub fn sample_min(&mut self, m: u64) {
        let m = m.max(1);
        self.min_rtt = Some(self.min_rtt.map_or(m, |x| x.min(m)));
    }

    /// The smoothed RTT (µs), once sampled.
    pub fn srtt_us(&self) -> Option<u64> {
        (self.srtt8 > 0).then_some(self.srtt8 >> 3)
    }

    /// srtt × 8 as Linux keeps it (0 before the first sample).
    pub fn srtt8(&self) -> u64 {
        self.srtt8
    }

    /// The RTO's deviation term (µs) as `tcpi_rttvar` reports it.
    pub fn rttvar_us(&self) -> u64 {
        self.rttvar
    }

    pub fn mdev_us(&self) -> u64 {
        self.mdev4 >> 2
    }

    pub fn min_rtt_us(&self) -> Option<u64> {
        self.min_rtt
    }

    /// The retransmission timeout before backoff (µs): srtt + rttvar, at most 120 s;
    /// 1 s before the first sample.
    pub fn rto_us(&self) -> u64 {
        if self.srtt8 == 0 {
            return RTO_INITIAL_US;
        }
        ((self.srtt8 >> 3) + self.rttvar).min(RTO_MAX_US)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_sample_gives_rtt_plus_the_minimum_rto() {
        let mut r = RttEstimator::default();
        r.sample(40_000, 0, 100);
        assert_eq!(r.srtt_us(), Some(40_000));
        // mdev = 2·40 ms = 80 ms < 200 ms: RTO = 40 + 200 ms.
        assert_eq!(r.rto_us(), 240_000);
        r.sample(40_000, 50, 200);
        // e = 0: mdev4 = 80000 − 20000 = 60000; rttvar stays 200 ms; round not over.
        assert_eq!((r.srtt_us(), r.mdev_us(), r.rto_us()), (Some(40_000), 15_000, 240_000));
    }

    #[test]
    fn a_large_deviation_lifts_the_rto_above_the_minimum() {
        let mut r = RttEstimator::default();
        r.sample(100_000, 0, 10);
        // srtt 100 ms, mdev4 200 000 → rttvar max(200 000, 200 000).
        r.sample(400_000, 5, 20);
        // e = 300 000: srtt8 = 800 000 + 300 000 = 1 100 000 (137.5 ms);
        // e − mdev4/4 = 300 000 − 50 000 → mdev4 = 450 000 > rttvar → rttvar 450 000;
        // snd_una 5 ≤ rtt_seq 10: the round goes on.
        assert_eq!(r.srtt_us(), Some(137_500));
        assert_eq!(r.rto_us(), 137_500 + 450_000);
    }
}
