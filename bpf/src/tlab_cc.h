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

#endif
