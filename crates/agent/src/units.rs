//! Human units at the command-line boundary: durations ("10ms", "2s", "500us"),
//! sizes ("10MB", "1448", "64KiB") and rates ("5Mbit", "1.5Gbit/s").
//!
//! Everything is parsed once into integers: nanoseconds, bytes, bits per second.
//! Decimal prefixes (k, M, G, T) are powers of 1000; binary prefixes (Ki, Mi, Gi, Ti) are
//! powers of 1024. A number may have a fractional part ("1.5MB").

/// Splits "12.5ms" into (12.5, "ms"). The number part may be an integer or decimal.
fn split_number(s: &str) -> Result<(f64, &str), String> {
    let s = s.trim();
    let end = s
        .char_indices()
        .find(|&(_, c)| !(c.is_ascii_digit() || c == '.'))
        .map(|(i, _)| i)
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(end);
    if num.is_empty() {
        return Err(format!("'{s}': expected a number followed by a unit"));
    }
    let value: f64 = num.parse().map_err(|_| format!("'{s}': '{num}' is not a number"))?;
    Ok((value, unit.trim()))
}

fn to_integer(value: f64, scale: f64, what: &str, input: &str) -> Result<u64, String> {
    let v = (value * scale).round();
    if !v.is_finite() || v < 0.0 || v > u64::MAX as f64 {
        return Err(format!("'{input}': {what} out of range"));
    }
    Ok(v as u64)
}

/// Parses a duration into nanoseconds. Units: ns, us (or µs), ms, s, min, h.
/// A bare number is rejected (ambiguous), except "0".
pub fn parse_duration_ns(s: &str) -> Result<u64, String> {
    let (value, unit) = split_number(s)?;
    let scale = match unit {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        "min" => 60e9,
        "h" => 3600e9,
        "" if value == 0.0 => 0.0,
        "" => return Err(format!("'{s}': duration needs a unit (ns, us, ms, s, min, h)")),
        _ => {
            return Err(format!(
                "'{s}': unknown duration unit '{unit}' (use ns, us, ms, s, min, h)"
            ))
        }
    };
    to_integer(value, scale, "duration", s)
}

/// Parses a size into bytes. Units: B (or none), kB/KB/k, MB/M, GB/G, TB/T (powers of 1000),
/// KiB, MiB, GiB, TiB (powers of 1024).
pub fn parse_size_bytes(s: &str) -> Result<u64, String> {
    let (value, unit) = split_number(s)?;
    let scale = match unit {
        "" | "B" => 1.0,
        "k" | "K" | "kB" | "KB" => 1e3,
        "M" | "MB" => 1e6,
        "G" | "GB" => 1e9,
        "T" | "TB" => 1e12,
        "Ki" | "KiB" => 1024.0,
        "Mi" | "MiB" => 1024.0 * 1024.0,
        "Gi" | "GiB" => 1024.0 * 1024.0 * 1024.0,
        "Ti" | "TiB" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
        _ => {
            return Err(format!(
                "'{s}': unknown size unit '{unit}' (use B, kB, MB, GB, KiB, MiB, GiB)"
            ))
        }
    };
    to_integer(value, scale, "size", s)
}

/// Parses a rate into bits per second. Units: bit, kbit, Mbit, Gbit, Tbit (optionally with
/// "/s" or "ps"), bps/kbps/Mbps/Gbps, and byte rates Bps/kBps/MBps/GBps (times 8).
pub fn parse_rate_bps(s: &str) -> Result<u64, String> {
    let (value, unit) = split_number(s)?;
    let unit = unit
        .strip_suffix("/s")
        .or_else(|| unit.strip_suffix("ps").filter(|u| u.ends_with("bit")))
        .unwrap_or(unit);
    let scale = match unit {
        "bit" | "bps" | "b" => 1.0,
        "kbit" | "Kbit" | "kbps" | "Kbps" | "k" | "K" => 1e3,
        "Mbit" | "mbit" | "Mbps" | "M" => 1e6,
        "Gbit" | "gbit" | "Gbps" | "G" => 1e9,
        "Tbit" | "tbit" | "Tbps" | "T" => 1e12,
        "Bps" | "B" => 8.0,
        "kBps" | "KBps" | "kB" | "KB" => 8e3,
        "MBps" | "MB" => 8e6,
        "GBps" | "GB" => 8e9,
        "" => {
            return Err(format!(
                "'{s}': rate needs a unit (bit, kbit, Mbit, Gbit, or bytes: B, kB, MB)"
            ))
        }
        _ => return Err(format!("'{s}': unknown rate unit '{unit}' (use bit, kbit, Mbit, Gbit)")),
    };
    let v = to_integer(value, scale, "rate", s)?;
    if v == 0 {
        return Err(format!("'{s}': rate must be positive"));
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration_ns("10ms"), Ok(10_000_000));
        assert_eq!(parse_duration_ns("2s"), Ok(2_000_000_000));
        assert_eq!(parse_duration_ns("500us"), Ok(500_000));
        assert_eq!(parse_duration_ns("500µs"), Ok(500_000));
        assert_eq!(parse_duration_ns("1.5s"), Ok(1_500_000_000));
        assert_eq!(parse_duration_ns("250ns"), Ok(250));
        assert_eq!(parse_duration_ns("2min"), Ok(120_000_000_000));
        assert_eq!(parse_duration_ns(" 3 ms "), Ok(3_000_000));
        assert_eq!(parse_duration_ns("0"), Ok(0));
        assert!(parse_duration_ns("10").is_err());
        assert!(parse_duration_ns("ms").is_err());
        assert!(parse_duration_ns("10 parsecs").is_err());
        assert!(parse_duration_ns("-1s").is_err());
        assert!(parse_duration_ns("").is_err());
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size_bytes("1448"), Ok(1448));
        assert_eq!(parse_size_bytes("1448B"), Ok(1448));
        assert_eq!(parse_size_bytes("10MB"), Ok(10_000_000));
        assert_eq!(parse_size_bytes("64KiB"), Ok(65_536));
        assert_eq!(parse_size_bytes("1.5kB"), Ok(1500));
        assert_eq!(parse_size_bytes("2GiB"), Ok(2 * 1024 * 1024 * 1024));
        assert_eq!(parse_size_bytes("20M"), Ok(20_000_000));
        assert!(parse_size_bytes("10Mbit").is_err());
        assert!(parse_size_bytes("x").is_err());
        assert!(parse_size_bytes("1.2.3MB").is_err());
    }

    #[test]
    fn rates() {
        assert_eq!(parse_rate_bps("5Mbit"), Ok(5_000_000));
        assert_eq!(parse_rate_bps("5Mbit/s"), Ok(5_000_000));
        assert_eq!(parse_rate_bps("5Mbps"), Ok(5_000_000));
        assert_eq!(parse_rate_bps("1.5Gbit"), Ok(1_500_000_000));
        assert_eq!(parse_rate_bps("100kbit"), Ok(100_000));
        assert_eq!(parse_rate_bps("64kbps"), Ok(64_000));
        assert_eq!(parse_rate_bps("9600bit"), Ok(9600));
        assert_eq!(parse_rate_bps("1MBps"), Ok(8_000_000));
        assert!(parse_rate_bps("5").is_err());
        assert!(parse_rate_bps("0Mbit").is_err());
        assert!(parse_rate_bps("5furlongs").is_err());
    }
}
