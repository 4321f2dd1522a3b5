//! The agent's side of the one-way delay exchange (`agent_proto::one_way`): one task per
//! connection that echoes every stamp the peer sends and, when this end stamps (it sends
//! the payload and its controller steers by one-way delay), sends its stamps and hands
//! each echo's sample to the controller through the probe. Every tick it also tells the
//! exchange how many DATAGRAM frames quinn has sent, so samples run from each stamp's
//! departure (seen within a tick), not from when it was handed to quinn.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};

use agent::cc::Probe;
use agent_proto::one_way::{Reaction, STAMP_INTERVAL};

use crate::sys;

/// Runs until the connection closes (the caller aborts it earlier if it likes). If this
/// end's controller wants one-way samples, it polls for due stamps every
/// [`STAMP_INTERVAL`]; an end that only echoes never wakes but for a datagram.
pub fn spawn(conn: quinn::Connection, probe: Arc<Probe>) -> tokio::task::JoinHandle<()> {
    let ticks = probe.wants_one_way;
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_nanos(STAMP_INTERVAL));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        loop {
            tokio::select! {
                d = conn.read_datagram() => {
                    let Ok(d) = d else { return };
                    let reaction = probe.one_way.lock().unwrap().on_datagram(sys::now_ns(), &d);
                    match reaction {
                        Reaction::Reply(echo) => {
                            if let Err(e) = conn.send_datagram(echo.into()) {
                                probe.one_way.lock().unwrap().note_send_error(e);
                            }
                        }
                        Reaction::Sample(delay) => probe.deliver_one_way(Instant::now(), delay),
                        Reaction::Ignore => {}
                    }
                }
                _ = tick.tick(), if ticks => {
                    let acked = probe.bytes_acked.load(Relaxed);
                    let (now, frames) = (sys::now_ns(), conn.stats().frame_tx.datagram);
                    let mut one_way = probe.one_way.lock().unwrap();
                    one_way.observe_sent(now, frames);
                    let stamp = one_way.poll_stamp(now, acked);
                    drop(one_way);
                    if let Some(s) = stamp {
                        if let Err(e) = conn.send_datagram(s.into()) {
                            probe.one_way.lock().unwrap().note_send_error(e);
                        }
                    }
                }
            }
        }
    })
}
