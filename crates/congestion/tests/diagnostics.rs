//! Every controller declares every diagnostic it reports (`diagnostic_names`), so a
//! series can fix its columns before the first sample: driven through slow start, losses,
//! one-way samples and recovery, no report may name a diagnostic the controller did not
//! declare.

mod common;

use common::*;
use congestion::{build, Controller, OneWayDelay, Params, NAMES};

fn check(c: &dyn Controller, when: &str) {
    let declared = c.diagnostic_names();
    for (name, _) in c.diagnostics() {
        assert!(
            declared.contains(&name),
            "{}: reports `{name}` {when} but declares only {declared:?}",
            c.name()
        );
    }
}

fn drive(mut c: Box<dyn Controller>) {
    check(c.as_ref(), "at start");
    // Late enough that the first round's packets were sent after time 0 (`ack_round`).
    let mut now = SECOND;
    for round in 0..40 {
        // The queue grows by 2 ms a round, so delay-based controllers see queueing.
        let rtt = 40 * MS + round * 2 * MS;
        if c.wants_one_way_delay() {
            c.on_one_way_delay(&OneWayDelay {
                now,
                delay: (rtt / 2) as i64 - 5_000_000_000,
            });
        }
        now = ack_round(c.as_mut(), now, rtt);
        check(c.as_ref(), &format!("after round {round}"));
        if round % 9 == 8 {
            c.on_loss(&loss(now, now - rtt / 2));
            check(c.as_ref(), &format!("after the loss in round {round}"));
        }
    }
}

#[test]
fn every_reported_diagnostic_is_declared() {
    for name in NAMES {
        drive(build(name, &Params::new(), MSS, 0).unwrap());
    }
    let rtt_signal: Params = [("delay_signal".to_string(), "rtt".to_string())].into();
    drive(build("ledbat", &rtt_signal, MSS, 0).unwrap());
}
