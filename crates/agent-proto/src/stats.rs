//! Small statistics used by the summaries: descriptive statistics with percentiles,
//! RFC 3550 interarrival jitter and RFC 3393 IP packet delay variation.

use serde::ser::{Serialize, SerializeMap, Serializer};

/// Descriptive statistics of a sample. `std` is the population standard deviation;
/// percentiles interpolate linearly between closest ranks (numpy's default).
#[derive(Clone, Debug, PartialEq)]
pub struct Describe {
    pub count: usize,
    pub mean: f64,
    pub std: f64,
    pub min: f64,
    pub max: f64,
    pub p50: f64,
    pub p95: f64,
    pub p99: f64,
}

pub fn describe(values: &[f64]) -> Option<Describe> {
    if values.is_empty() {
        return None;
    }
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let var = values.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n;
    let mut sorted = values.to_vec();
    sorted.sort_by(|a, b| a.total_cmp(b));
    Some(Describe {
        count: values.len(),
        mean,
        std: var.sqrt(),
        min: sorted[0],
        max: sorted[sorted.len() - 1],
        p50: percentile_sorted(&sorted, 50.0),
        p95: percentile_sorted(&sorted, 95.0),
        p99: percentile_sorted(&sorted, 99.0),
    })
}

/// Percentile `p` (0..=100) of an ascending slice, linear interpolation.
pub fn percentile_sorted(sorted: &[f64], p: f64) -> f64 {
    if sorted.len() == 1 {
        return sorted[0];
    }
    let rank = p / 100.0 * (sorted.len() - 1) as f64;
    let lo = rank.floor() as usize;
    let hi = rank.ceil() as usize;
    let frac = rank - lo as f64;
    sorted[lo] + (sorted[hi] - sorted[lo]) * frac
}

/// Statistics as a summary object: `count`, then every statistic divided by `scale`
/// (e.g. 1e6 for ns → ms) under a key suffixed with `unit` (`mean_ms`, ...). The keys
/// depend on the unit, so the object is serialised as a map.
#[derive(Clone, Debug, PartialEq)]
pub struct Scaled {
    pub describe: Describe,
    pub scale: f64,
    pub unit: &'static str,
}

impl Serialize for Scaled {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let d = &self.describe;
        let mut m = s.serialize_map(Some(8))?;
        m.serialize_entry("count", &d.count)?;
        for (k, v) in [
            ("mean", d.mean),
            ("std", d.std),
            ("min", d.min),
            ("max", d.max),
            ("p50", d.p50),
            ("p95", d.p95),
            ("p99", d.p99),
        ] {
            m.serialize_entry(&format!("{k}_{}", self.unit), &(v / self.scale))?;
        }
        m.end()
    }
}

/// Statistics of `values` for a summary (null when there were no samples).
pub fn scaled(values: &[f64], scale: f64, unit: &'static str) -> Option<Scaled> {
    describe(values).map(|describe| Scaled { describe, scale, unit })
}

/// RFC 3550 §6.4.1 interarrival jitter, in the units of the inputs.
/// `packets` are (send time, receive time) in order of arrival; for each packet after the
/// first, D = (R_i − R_{i−1}) − (S_i − S_{i−1}) and J += (|D| − J) / 16.
/// Returns the final J (0 with fewer than two packets).
pub fn rfc3550_jitter(packets: &[(i64, i64)]) -> f64 {
    let mut j = 0.0f64;
    for w in packets.windows(2) {
        let (s0, r0) = w[0];
        let (s1, r1) = w[1];
        let d = ((r1 - r0) - (s1 - s0)) as f64;
        j += (d.abs() - j) / 16.0;
    }
    j
}

/// RFC 3393 IP packet delay variation: mean of |D(n) − D(n−1)| over pairs of packets with
/// consecutive sequence numbers that were both received, where D is the one-way delay.
/// `packets` are (seq, one-way delay) in any order, duplicates already removed.
/// Returns (mean |ipdv|, number of pairs); None when no pair exists.
pub fn rfc3393_ipdv(packets: &[(u64, i64)]) -> Option<(f64, usize)> {
    let mut sorted = packets.to_vec();
    sorted.sort_unstable_by_key(|&(seq, _)| seq);
    let mut sum = 0.0f64;
    let mut pairs = 0usize;
    for w in sorted.windows(2) {
        if w[1].0 == w[0].0 + 1 {
            sum += (w[1].1 - w[0].1).abs() as f64;
            pairs += 1;
        }
    }
    (pairs > 0).then(|| (sum / pairs as f64, pairs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn describe_basic() {
        let d = describe(&[1.0, 2.0, 3.0, 4.0, 5.0]).unwrap();
        assert_eq!(d.count, 5);
        assert_eq!(d.mean, 3.0);
        assert!((d.std - 2f64.sqrt()).abs() < 1e-12);
        assert_eq!((d.min, d.max, d.p50), (1.0, 5.0, 3.0));
        assert!((d.p95 - 4.8).abs() < 1e-12);
        assert!((d.p99 - 4.96).abs() < 1e-12);
        assert_eq!(describe(&[7.0]).unwrap().p99, 7.0);
        assert!(describe(&[]).is_none());
    }

    #[test]
    fn scaled_keys_carry_the_unit() {
        let v = serde_json::to_value(scaled(&[1e6, 3e6], 1e6, "ms")).unwrap();
        // Sorted: serde_json keeps insertion order when a crate of the workspace turns on
        // its `preserve_order` feature, and sorts keys otherwise.
        let mut keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        keys.sort_unstable();
        assert_eq!(
            keys,
            ["count", "max_ms", "mean_ms", "min_ms", "p50_ms", "p95_ms", "p99_ms", "std_ms"]
        );
        assert_eq!(
            (v["count"].as_u64(), v["mean_ms"].as_f64(), v["max_ms"].as_f64()),
            (Some(2), Some(2.0), Some(3.0))
        );
        assert_eq!(
            serde_json::to_value(scaled(&[], 1e3, "us")).unwrap(),
            serde_json::Value::Null
        );
    }

    #[test]
    fn jitter_constant_delay_is_zero() {
        let pkts: Vec<(i64, i64)> = (0..100).map(|i| (i * 1000, i * 1000 + 500)).collect();
        assert_eq!(rfc3550_jitter(&pkts), 0.0);
    }

    #[test]
    fn jitter_hand_computed() {
        // Sent every 10, delays 5, 7, 5: D = +2 then −2.
        let pkts = [(0, 5), (10, 17), (20, 25)];
        let j1 = 2.0 / 16.0;
        let j2 = j1 + (2.0 - j1) / 16.0;
        assert!((rfc3550_jitter(&pkts) - j2).abs() < 1e-12);
        assert_eq!(rfc3550_jitter(&pkts[..1]), 0.0);
    }

    #[test]
    fn jitter_converges_to_mean_abs_d() {
        // Alternating delays 0 and 4: |D| is always 4, so J converges to 4.
        let pkts: Vec<(i64, i64)> = (0..1000)
            .map(|i| (i * 100, i * 100 + if i % 2 == 0 { 0 } else { 4 }))
            .collect();
        assert!((rfc3550_jitter(&pkts) - 4.0).abs() < 1e-6);
    }

    #[test]
    fn ipdv_hand_computed() {
        // delays by seq: 0→10, 1→13, 2→11, (3 lost), 4→20, 5→20
        let pkts = [(0, 10), (2, 11), (1, 13), (5, 20), (4, 20)];
        // pairs (0,1): 3, (1,2): 2, (4,5): 0 → mean 5/3
        let (m, n) = rfc3393_ipdv(&pkts).unwrap();
        assert_eq!(n, 3);
        assert!((m - 5.0 / 3.0).abs() < 1e-12);
        assert!(rfc3393_ipdv(&[(0, 1), (2, 3)]).is_none());
    }
}
