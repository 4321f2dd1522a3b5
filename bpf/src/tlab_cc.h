/* Helpers shared by the lab's BPF congestion controls (bpf/src/, one file each).
 *
 * BPF has no floating point, so the controllers compute in integers: parameters come in
 * thousandths ("milli" units) and the correlation layer does exact 128-bit intermediate
 * arithmetic with the helpers below (the BPF backend has no 128-bit multiply/divide). */
#ifndef TLAB_CC_H
#define TLAB_CC_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#define TCP_INFINITE_SSTHRESH 0x7fffffff
#define TLAB_MIN_CWND 2 /* packets: RFC 9002's minimum window, as the congestion crate */

static __always_inline struct tcp_sock *tlab_tcp_sk(const struct sock *sk)
{
	return (struct tcp_sock *)sk;
}

static __always_inline struct inet_connection_sock *tlab_inet_csk(const struct sock *sk)
{
	return (struct inet_connection_sock *)sk;
}

static __always_inline void *tlab_ca_priv(const struct sock *sk)
{
	return (void *)tlab_inet_csk(sk)->icsk_ca_priv;
}

static __always_inline int tlab_in_slow_start(const struct tcp_sock *tp)
{
	return tp->snd_cwnd < tp->snd_ssthresh;
}

/* seq1 after seq2 (wrapping TCP sequence numbers). */
static __always_inline int tlab_after(__u32 seq1, __u32 seq2)
{
	return (__s32)(seq2 - seq1) < 0;
}

extern __u32 tcp_reno_undo_cwnd(struct sock *sk) __ksym;

/* The struct_ops glue of a controller whose callbacks are PREFIX_init, PREFIX_cong_avoid,
 * PREFIX_state, PREFIX_cwnd_event and PREFIX_pkts_acked: its ssthresh (the kernel's
 * SSTHRESH_FN), its undo (Reno's, as Linux's Vegas and CUBIC use) and the map VAR under
 * OPS_NAME, a placeholder the loader replaces per instance (same length, unique pattern).
 * One place, so that every controller registers the same callbacks. */
#define TLAB_CC_OPS(var, prefix, ssthresh_fn, ops_name)                                  \
	SEC("struct_ops/" #prefix "_ssthresh")                                             \
	__u32 BPF_PROG(prefix##_ssthresh, struct sock *sk)                                 \
	{                                                                                  \
		return ssthresh_fn(sk);                                                    \
	}                                                                                  \
	SEC("struct_ops/" #prefix "_undo_cwnd")                                            \
	__u32 BPF_PROG(prefix##_undo_cwnd, struct sock *sk)                                \
	{                                                                                  \
		return tcp_reno_undo_cwnd(sk);                                             \
	}                                                                                  \
	SEC(".struct_ops")                                                                 \
	struct tcp_congestion_ops var = {                                                  \
		.init = (void *)prefix##_init,                                             \
		.ssthresh = (void *)prefix##_ssthresh,                                     \
		.cong_avoid = (void *)prefix##_cong_avoid,                                 \
		.set_state = (void *)prefix##_state,                                       \
		.cwnd_event = (void *)prefix##_cwnd_event,                                 \
		.pkts_acked = (void *)prefix##_pkts_acked,                                 \
		.undo_cwnd = (void *)prefix##_undo_cwnd,                                   \
		.name = ops_name,                                                          \
	}

#endif
