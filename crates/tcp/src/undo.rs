//! What a window reduction needs to be undone when it proves unnecessary (the undo
//! procedures of `tcp_input.c`): where the reduction began (`undo_marker`), how many of
//! its retransmissions are not yet shown spurious (`undo_retrans`, counted down by
//! D-SACKs, RFC 2883), the ssthresh before it, and the timestamp of its first
//! retransmission, which an ACK echoing an older timestamp shows was not needed
//! (`tcp_packet_delayed`, the Eifel detection of RFC 3522).

/// One connection's undo state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Undo {
    /// `undo_marker`: `snd_una` when the reduction began; `None`: nothing to undo.
    pub marker: Option<u64>,
    /// `undo_retrans`: retransmissions not yet reported duplicate; −1 when none was out
    /// as the reduction began (Linux's "`retrans_out ? : -1`", so that only a timestamp
    /// can prove such a reduction spurious).
    pub retrans: i64,
    /// `prior_ssthresh`: the ssthresh before the reduction (0: it may not be undone).
    pub prior_ssthresh: u32,
    /// `retrans_stamp`: the TSval of this episode's first retransmission.
    pub retrans_stamp: Option<u32>,
    /// `dsack_dups`: segments the peer has reported received twice.
    pub dsack_dups: u64,
}

impl Undo {
    /// `tcp_init_undo` as a reduction begins at `snd_una` with `retrans_out` out.
    pub fn init(&mut self, snd_una: u64, retrans_out: u32) {
        self.marker = Some(snd_una);
        self.retrans = if retrans_out > 0 { i64::from(retrans_out) } else { -1 };
    }

    /// `tcp_retransmit_skb` sent one segment again at TSval `ts`: the episode's first
    /// retransmission starts its stamp, and each is one more to be shown spurious.
    pub fn retransmitted(&mut self, ts: u32) {
        self.retrans_stamp.get_or_insert(ts);
        self.retrans = self.retrans.max(0) + 1;
    }

    /// `segs` retransmissions ending at `end` were reported received twice.
    pub fn spurious(&mut self, end: u64, segs: u32) {
        if self.marker.is_some_and(|m| end > m) && self.retrans > 0 {
            self.retrans = (self.retrans - i64::from(segs)).max(0);
        }
    }

    /// `tcp_packet_delayed`: the ACK's timestamp echo `tsecr` is older than the first
    /// retransmission (the original arrived), or nothing was retransmitted.
    pub fn packet_delayed(&self, tsecr: Option<u32>) -> bool {
        match self.retrans_stamp {
            Some(stamp) => tsecr.is_some_and(|e| e != 0 && (e.wrapping_sub(stamp) as i32) < 0),
            None => true,
        }
    }

    /// `tcp_may_undo`.
    pub fn may_undo(&self, tsecr: Option<u32>) -> bool {
        self.marker.is_some() && (self.retrans == 0 || self.packet_delayed(tsecr))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reduction_with_retransmissions_is_undone_once_each_is_reported_twice() {
        let mut u = Undo::default();
        u.init(100, 2);
        u.retrans_stamp = Some(50);
        assert!(
            !u.may_undo(Some(50)),
            "an echo of the retransmission itself proves nothing"
        );
        u.spurious(90, 1);
        assert_eq!(u.retrans, 2, "data below the marker belongs to an earlier episode");
        u.spurious(200, 1);
        assert!(!u.may_undo(None));
        u.spurious(300, 1);
        assert!(u.may_undo(None));
    }

    #[test]
    fn an_echo_older_than_the_first_retransmission_undoes_and_wraps_with_the_clock() {
        let mut u = Undo::default();
        u.init(1, 0);
        assert_eq!(u.retrans, -1);
        u.spurious(10, 1);
        assert_eq!(u.retrans, -1, "with none out, D-SACKs have nothing to count");
        u.retransmitted(3);
        u.retransmitted(4);
        assert_eq!((u.retrans, u.retrans_stamp), (2, Some(3)));
        assert!(u.may_undo(Some(u32::MAX - 5)), "sent before the clock wrapped");
        assert!(!u.may_undo(Some(3)));
        assert!(!u.may_undo(Some(0)), "0 echoes nothing");
        assert!(!u.may_undo(None));
    }
}
