//! The series both simulated TCP stacks write: the agent's TCP series (`docs/agent.md`),
//! connection 0, with the columns the stack has. The lab's TCP (`super::transportlab_tcp`)
//! reports its congestion window as Linux's TCP_INFO does; smoltcp (`super::tcp`) keeps
//! its window private, so its series has no window columns and its RTT and retransmission
//! columns are what the endpoint measured. The RTT columns are null until the first RTT
//! sample.

use std::sync::Arc;

use arrow_array::{ArrayRef, UInt32Array, UInt64Array};
use arrow_schema::{DataType, Field, Schema};
use linkem::Nanos;

use super::{series_key_columns, series_key_fields, Row};

/// The windows as TCP_INFO reports them: the congestion window, and the receiving
/// side's (`rcv_ssthresh`, `rcv_space`, `rcv_wnd`, bytes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Window {
    /// In segments of `snd_mss` bytes.
    pub cwnd: u32,
    pub ssthresh: u32,
    pub snd_mss: u32,
    pub ca_state: u32,
    pub rcv_ssthresh: u32,
    pub rcv_space: u32,
    pub rcv_wnd: u64,
}

/// One row of the series.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sample {
    pub t_ns: Nanos,
    /// Payload this end sent (the sender) or read (the receiver).
    pub bytes: u64,
    /// The window, where the stack reports it (then every row has one).
    pub window: Option<Window>,
    pub srtt_us: Option<u64>,
    pub rttvar_us: Option<u64>,
    pub min_rtt_us: Option<u64>,
    pub bytes_in_flight: u64,
    pub total_retrans: u64,
}

/// The columns a series holds behind the key columns, with the windows' (`cwnd`,
/// `cwnd_bytes`, `ssthresh`, `snd_mss`, `ca_state`, `rcv_ssthresh`, `rcv_space`,
/// `rcv_wnd`) if `window`.
pub fn schema(window: bool) -> Schema {
    let u64 = |name: &str, nullable: bool| Field::new(name, DataType::UInt64, nullable);
    let u32 = |name: &str| Field::new(name, DataType::UInt32, false);
    let mut fields = Vec::from(series_key_fields());
    fields.push(u64("bytes", false));
    if window {
        fields.extend([
            u32("cwnd"),
            u64("cwnd_bytes", false),
            u32("ssthresh"),
            u32("snd_mss"),
            u32("ca_state"),
            u32("rcv_ssthresh"),
            u32("rcv_space"),
            u64("rcv_wnd", false),
        ]);
    }
    fields.extend([
        u64("srtt_us", true),
        u64("rttvar_us", true),
        u64("min_rtt_us", true),
        u64("bytes_in_flight", false),
        u64("total_retrans", false),
    ]);
    Schema::new(fields)
}

impl Row for Sample {
    /// The window's columns when `schema` has them (a row without a window gives zeros
    /// there; a stack's rows either all have one or none do).
    fn columns(s: &[Sample], schema: &Schema) -> Vec<ArrayRef> {
        let u64s = |f: &dyn Fn(&Sample) -> u64| Arc::new(UInt64Array::from_iter_values(s.iter().map(f))) as ArrayRef;
        let opts = |f: fn(&Sample) -> Option<u64>| Arc::new(UInt64Array::from_iter(s.iter().map(f))) as ArrayRef;
        let window = |x: &Sample| x.window.unwrap_or_default();
        let u32s =
            |f: fn(Window) -> u32| Arc::new(UInt32Array::from_iter_values(s.iter().map(|x| f(window(x))))) as ArrayRef;
        let mut columns = Vec::from(series_key_columns(s.iter().map(|x| x.t_ns)));
        columns.push(u64s(&|x| x.bytes));
        if schema.field_with_name("cwnd").is_ok() {
            columns.extend([
                u32s(|w| w.cwnd),
                u64s(&|x| u64::from(window(x).cwnd) * u64::from(window(x).snd_mss)),
                u32s(|w| w.ssthresh),
                u32s(|w| w.snd_mss),
                u32s(|w| w.ca_state),
                u32s(|w| w.rcv_ssthresh),
                u32s(|w| w.rcv_space),
                u64s(&|x| window(x).rcv_wnd),
            ]);
        }
        columns.extend([
            opts(|x| x.srtt_us),
            opts(|x| x.rttvar_us),
            opts(|x| x.min_rtt_us),
            u64s(&|x| x.bytes_in_flight),
            u64s(&|x| x.total_retrans),
        ]);
        columns
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_columns_only_where_the_stack_has_a_window() {
        let names = |s: &Schema| s.fields().iter().map(|f| f.name().clone()).collect::<Vec<_>>();
        let plain = schema(false);
        let full = schema(true);
        assert_eq!(names(&full).len(), names(&plain).len() + 8);
        assert_eq!(names(&full)[2..4], ["bytes", "cwnd"]);
        let row = Sample {
            t_ns: 10,
            bytes: 5,
            window: Some(Window {
                cwnd: 10,
                ssthresh: 7,
                snd_mss: 1448,
                ca_state: 0,
                rcv_ssthresh: 64_240,
                rcv_space: 14_600,
                rcv_wnd: 64_256,
            }),
            srtt_us: None,
            rttvar_us: None,
            min_rtt_us: Some(20_000),
            bytes_in_flight: 3,
            total_retrans: 1,
        };
        for s in [&plain, &full] {
            let columns = Sample::columns(std::slice::from_ref(&row), s);
            assert_eq!(columns.len(), s.fields().len());
            for (c, f) in columns.iter().zip(s.fields()) {
                assert_eq!(c.data_type(), f.data_type(), "{}", f.name());
            }
        }
        let cwnd_bytes = Sample::columns(&[row], &full)[4].clone();
        let cwnd_bytes = cwnd_bytes.as_any().downcast_ref::<UInt64Array>().unwrap();
        assert_eq!(cwnd_bytes.value(0), 10 * 1448);
    }
}
