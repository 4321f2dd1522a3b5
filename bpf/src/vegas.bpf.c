// SPDX-License-Identifier: GPL-2.0
/* TCP Vegas for kernel TCP as a BPF struct_ops congestion control, after Linux's
 * tcp_vegas.c (round structure, Reno fallback with < 3 RTT samples, losses as Reno) with
 * the lab's Diff (docs/algorithms.md, crates/congestion/src/vegas.rs):
 *   Diff = cwnd·(RTT − BaseRTT)/RTT packets queued
 * (Linux divides by BaseRTT). alpha, beta, gamma come from the loader
 * (transportlab.network.kernel_cc, docs/bpf.md), which also gives each loaded instance
 * its own name. */
#include "tlab_cc.h"

char _license[] SEC("license") = "GPL";

/* Set by the loader before load (.rodata); thousandths of a packet. */
struct vegas_params {
	__u64 alpha_milli;
	__u64 beta_milli;
	__u64 gamma_milli;
};

const volatile struct vegas_params params = {
	.alpha_milli = 2000,
	.beta_milli = 4000,
	.gamma_milli = 1000,
};

extern void tcp_reno_cong_avoid(struct sock *sk, __u32 ack, __u32 acked) __ksym;
extern __u32 tcp_reno_ssthresh(struct sock *sk) __ksym;
extern __u32 tcp_slow_start(struct tcp_sock *tp, __u32 acked) __ksym;

/* Per connection, in icsk_ca_priv (104 bytes). */
struct vegas {
	__u32 beg_snd_nxt; /* right edge during the last RTT */
	__u32 beg_snd_una; /* left edge during the last RTT */
	__u32 cnt_rtt;     /* RTT samples in this round */
	__u32 min_rtt;     /* minimum RTT of the round (µs) */
	__u32 base_rtt;    /* minimum of all RTT samples (µs) */
	__u8 doing_vegas_now;
};

static __always_inline void vegas_enable(struct sock *sk)
{
	struct tcp_sock *tp = tlab_tcp_sk(sk);
	struct vegas *v = tlab_ca_priv(sk);

	v->doing_vegas_now = 1;
	v->beg_snd_nxt = tp->snd_nxt;
	v->cnt_rtt = 0;
	v->min_rtt = 0x7fffffff;
}

static __always_inline void vegas_disable(struct sock *sk)
{
	struct vegas *v = tlab_ca_priv(sk);

	v->doing_vegas_now = 0;
}

SEC("struct_ops/tlab_vegas_init")
void BPF_PROG(tlab_vegas_init, struct sock *sk)
{
	struct vegas *v = tlab_ca_priv(sk);

	v->base_rtt = 0x7fffffff;
	vegas_enable(sk);
}

SEC("struct_ops/tlab_vegas_pkts_acked")
void BPF_PROG(tlab_vegas_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct vegas *v = tlab_ca_priv(sk);
	__u32 vrtt;

	if (sample->rtt_us < 0)
		return;
	/* Never allow a zero RTT (it would divide by zero in Diff). */
	vrtt = sample->rtt_us + 1;
	if (vrtt < v->base_rtt)
		v->base_rtt = vrtt;
	if (vrtt < v->min_rtt)
		v->min_rtt = vrtt;
	v->cnt_rtt++;
}

SEC("struct_ops/tlab_vegas_state")
void BPF_PROG(tlab_vegas_state, struct sock *sk, __u8 ca_state)
{
	if (ca_state == TCP_CA_Open)
		vegas_enable(sk);
	else
		vegas_disable(sk);
}

SEC("struct_ops/tlab_vegas_cwnd_event")
void BPF_PROG(tlab_vegas_cwnd_event, struct sock *sk, enum tcp_ca_event event)
{
	/* After idle: start a fresh round (BaseRTT is kept, as Linux's init would not). */
	if (event == CA_EVENT_CWND_RESTART || event == CA_EVENT_TX_START)
		vegas_enable(sk);
}

SEC("struct_ops/tlab_vegas_cong_avoid")
void BPF_PROG(tlab_vegas_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct tcp_sock *tp = tlab_tcp_sk(sk);
	struct vegas *v = tlab_ca_priv(sk);
	__u64 cwnd, rtt, base, diff_milli, target;

	if (!v->doing_vegas_now) {
		tcp_reno_cong_avoid(sk, ack, acked);
		return;
	}
	if (!tlab_after(ack, v->beg_snd_nxt)) {
		/* Within the round: only slow start grows per ack. */
		if (tlab_in_slow_start(tp))
			tcp_slow_start(tp, acked);
		return;
	}
	/* The round is over: once-per-RTT decision. */
	v->beg_snd_nxt = tp->snd_nxt;
	if (v->cnt_rtt <= 2) {
		/* Too few samples to trust Diff: Reno for this round. */
		tcp_reno_cong_avoid(sk, ack, acked);
	} else {
		cwnd = tp->snd_cwnd;
		rtt = v->min_rtt;
		base = v->base_rtt;
		/* Packets queued, in thousandths: cwnd·(RTT − BaseRTT)/RTT. */
		diff_milli = cwnd * (rtt - base) * 1000 / rtt;
		if (tlab_in_slow_start(tp)) {
			if (diff_milli > params.gamma_milli) {
				/* Leave slow start at what the path carries unqueued, plus one. */
				target = cwnd * base / rtt + 1;
				if (target < cwnd)
					tp->snd_cwnd = target;
				if (tp->snd_cwnd < TLAB_MIN_CWND)
					tp->snd_cwnd = TLAB_MIN_CWND;
				tp->snd_ssthresh = tp->snd_cwnd;
			} else {
				tcp_slow_start(tp, acked);
			}
		} else if (diff_milli > params.beta_milli) {
			if (tp->snd_cwnd > TLAB_MIN_CWND)
				tp->snd_cwnd = tp->snd_cwnd - 1;
			if (tp->snd_ssthresh > tp->snd_cwnd)
				tp->snd_ssthresh = tp->snd_cwnd;
		} else if (diff_milli < params.alpha_milli && !tp->app_limited) {
			tp->snd_cwnd = tp->snd_cwnd + 1;
		}
		if (tp->snd_cwnd > tp->snd_cwnd_clamp)
			tp->snd_cwnd = tp->snd_cwnd_clamp;
	}
	v->cnt_rtt = 0;
	v->min_rtt = 0x7fffffff;
}

TLAB_CC_OPS(tlab_vegas, tlab_vegas, tcp_reno_ssthresh, "tlab_veg_@@@@@@");
