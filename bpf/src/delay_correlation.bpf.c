// SPDX-License-Identifier: GPL-2.0
/* Nowlan's delay-correlation layer (2014) over the kernel's CUBIC, for kernel TCP as a BPF
 * struct_ops congestion control: the same algorithm and parameters as the congestion
 * crate's delay_correlation.rs (docs/algorithms.md), in integers.
 *
 * Per ACK with an RTT sample (pkts_acked; the kernel's sample is the RTT of the most
 * recently sent packet newly acked): x = packets in flight when that packet was sent
 * (the kernel's ack_sample.in_flight: data delivered between its send and its ack), y =
 * its RTT in µs. Sampled with p = min(1, window/(2·cwnd)) from SplitMix64 seeded with
 * `seed`, one draw per observation as in the crate. Once the circular window is full:
 * Pearson's R ≥ threshold ⇒ cwnd = estimate + dither, where the least-squares line meets
 * the kernel's minimum RTT, and CUBIC's growth is suppressed; otherwise CUBIC runs.
 *
 * Differences from the crate, forced by kernel TCP: the minimum RTT is the kernel's
 * windowed minimum (tcp_min_rtt); RTT samples of retransmitted packets are not marked in
 * pkts_acked, so no observation is taken outside TCP_CA_Open (recovery, loss, CWR) - a
 * superset of the ambiguous ones; CUBIC is the kernel's (HyStart, fixed beta 0.7), so
 * the crate's `variant` does not exist here. */
#include "tlab_cc.h"
#include "tlab_math.h"

char _license[] SEC("license") = "GPL";

#define MAX_WINDOW 4096 /* the contract's maximum of `window`; a power of two */
#define MAX_X (1U << 20) /* packets; bounds keep the running sums inside u64 */
#define MAX_Y (1U << 25) /* µs (33 s) */
#define MAX_ESTIMATE_MILLI 1000000000000ULL /* 1e9 packets, as the crate */

/* Set by the loader before load (.rodata); the contract's parameters, scaled. */
struct dc_params {
	__u64 window;                     /* samples, 4..4096 */
	__u64 threshold_ppm;              /* correlation threshold, millionths */
	__u64 seed;                       /* sampling generator seed */
	__u64 dither_small_milli;         /* packets/1000 */
	__u64 dither_large_min_milli;     /* packets/1000 */
	__u64 dither_large_divisor_milli; /* 1/1000 */
};

const volatile struct dc_params params = {
	.window = 32,
	.threshold_ppm = 900000,
	.seed = 0x5EEDDE1A7C0E2014ULL,
	.dither_small_milli = 2000,
	.dither_large_min_milli = 10000,
	.dither_large_divisor_milli = 16000,
};

/* Per connection (too big for icsk_ca_priv, which holds CUBIC's state). */
struct dc_state {
	__u64 rng;
	__u64 sum_x, sum_y, sum_xx, sum_yy, sum_xy; /* exact: integers */
	__u32 count;                                /* filled slots */
	__u32 next;                                 /* the write index */
	__u8 clamp_active;
	__u8 ca_open;
	__u32 x[MAX_WINDOW];
	__u32 y[MAX_WINDOW];
};

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct dc_state);
} dc_states SEC(".maps");

/* Connections whose window could not be allocated run CUBIC unchanged; counted here. */
__u64 storage_failures = 0;

extern void cubictcp_init(struct sock *sk) __ksym;
extern __u32 cubictcp_recalc_ssthresh(struct sock *sk) __ksym;
extern void cubictcp_cong_avoid(struct sock *sk, __u32 ack, __u32 acked) __ksym;
extern void cubictcp_state(struct sock *sk, __u8 new_state) __ksym;
extern void cubictcp_cwnd_event(struct sock *sk, enum tcp_ca_event event) __ksym;
extern void cubictcp_acked(struct sock *sk, const struct ack_sample *sample) __ksym;

static __always_inline struct dc_state *state_of(struct sock *sk)
{
	return bpf_sk_storage_get(&dc_states, sk, NULL, 0);
}

SEC("struct_ops/tlab_dc_init")
void BPF_PROG(tlab_dc_init, struct sock *sk)
{
	struct dc_state *s;

	cubictcp_init(sk);
	s = bpf_sk_storage_get(&dc_states, sk, NULL, BPF_SK_STORAGE_GET_F_CREATE);
	if (!s) {
		__sync_fetch_and_add(&storage_failures, 1);
		return;
	}
	s->rng = params.seed;
	s->sum_x = s->sum_y = s->sum_xx = s->sum_yy = s->sum_xy = 0;
	s->count = 0;
	s->next = 0;
	s->clamp_active = 0;
	s->ca_open = 1;
}

/* Whether this observation is sampled: u < min(1, window/(2·cwnd)) with u the top 53
 * bits of the next draw over 2^53, i.e. u·2^53·2·cwnd < window·2^53 (exact). */
static __always_inline int sampled(struct dc_state *s, __u32 cwnd)
{
	__u64 u = splitmix64_next(&s->rng) >> 11;
	struct u128 lhs = u128_mul(u, 2 * (__u64)(cwnd ? cwnd : 1));
	struct u128 rhs;

	rhs.hi = params.window >> 11;
	rhs.lo = params.window << 53;
	return u128_lt(lhs, rhs);
}

/* Inserts (x, y) over the oldest pair; returns the slot written. */
static __always_inline __u32 push(struct dc_state *s, __u64 x, __u64 y)
{
	__u32 slot = s->next & (MAX_WINDOW - 1);
	__u64 old_x, old_y;

	if (s->count >= params.window) {
		old_x = s->x[slot];
		old_y = s->y[slot];
		s->sum_x -= old_x;
		s->sum_y -= old_y;
		s->sum_xx -= old_x * old_x;
		s->sum_yy -= old_y * old_y;
		s->sum_xy -= old_x * old_y;
	} else {
		s->count++;
	}
	s->x[slot] = x;
	s->y[slot] = y;
	s->sum_x += x;
	s->sum_y += y;
	s->sum_xx += x * x;
	s->sum_yy += y * y;
	s->sum_xy += x * y;
	s->next = slot + 1 >= params.window ? 0 : slot + 1;
	return slot;
}

/* n·Σab − Σa·Σb for a spread (≥ 0 by Cauchy–Schwarz). */
static __always_inline struct u128 spread(__u64 n, __u64 sum_ab, __u64 sum_a, __u64 sum_b)
{
	struct u128 p = u128_mul(n, sum_ab), q = u128_mul(sum_a, sum_b);

	if (u128_lt(p, q)) {
		p.hi = 0;
		p.lo = 0;
		return p;
	}
	return u128_sub(p, q);
}

/* Decides from a full window; returns the window in packets to clamp at, or 0 when the
 * correlation is below the threshold (CUBIC runs) and -1 to keep the state as it is. */
static __always_inline __s64 decide(struct dc_state *s, __u32 slot, __u32 min_rtt_us)
{
	__u64 n = params.window, a_s, b_s, c_s, r2, d_abs, term, est, dither;
	struct u128 a, b, c_pos, c_neg, c;
	int sa, sb, sc, shift, negative_d;

	/* A = nΣxx − (Σx)², B = nΣyy − (Σy)², C = nΣxy − ΣxΣy, exact in 128 bits. */
	a = spread(n, s->sum_xx, s->sum_x, s->sum_x);
	b = spread(n, s->sum_yy, s->sum_y, s->sum_y);
	c_pos = u128_mul(n, s->sum_xy);
	c_neg = u128_mul(s->sum_x, s->sum_y);
	/* R = 0 (no variance, or C = 0) passes only a threshold of 0, and then the line is
	 * flat or undefined: keep the state, as the crate does. R < 0: below any threshold. */
	if ((!a.hi && !a.lo) || (!b.hi && !b.lo) || (c_pos.hi == c_neg.hi && c_pos.lo == c_neg.lo))
		return params.threshold_ppm == 0 ? -1 : 0;
	if (u128_lt(c_pos, c_neg))
		return 0;
	c = u128_sub(c_pos, c_neg);
	/* R² = C²/(A·B) is unchanged when A and B shift right by sa, sb and C by (sa+sb)/2:
	 * shift them into 31 bits so the products fit in 64. */
	sa = u128_bit_length(a) - 31;
	sb = u128_bit_length(b) - 31;
	sa = sa < 0 ? 0 : sa;
	sb = sb < 0 ? 0 : sb;
	if ((sa + sb) & 1)
		sb++;
	sc = (sa + sb) / 2;
	a_s = u128_shr(a, sa).lo;
	b_s = u128_shr(b, sb).lo;
	c_s = u128_shr(c, sc).lo;
	if (!a_s || !b_s)
		return 0;
	if (c_s > 0xffffffffULL)
		c_s = 0xffffffffULL;
	/* R ≥ threshold ⇔ R² ≥ threshold² (R > 0 here), in 1e-12. */
	r2 = mul_div(c_s * c_s, 1000000000000ULL, a_s * b_s);
	if (r2 < params.threshold_ppm * params.threshold_ppm)
		return 0;
	/* Where the line meets the minimum RTT: x̄ − (ȳ − min_rtt)/m, m = C/A:
	 * estimate = (Σx − (Σy − n·min_rtt)·A/C)/n. */
	negative_d = s->sum_y < n * min_rtt_us;
	d_abs = negative_d ? n * min_rtt_us - s->sum_y : s->sum_y - n * min_rtt_us;
	term = mul_div(d_abs * 1000, a_s, c_s); /* ×1000, then ×2^(sa−sc) */
	shift = sa - sc;
	if (shift > 0)
		term = term > (~0ULL >> shift) ? ~0ULL : term << shift;
	else if (shift < 0)
		term >>= -shift;
	term /= n;
	est = s->sum_x * 1000 / n; /* x̄, thousandths of a packet */
	if (negative_d)
		est = est + term > MAX_ESTIMATE_MILLI || est + term < est ? MAX_ESTIMATE_MILLI : est + term;
	else
		est = term >= est ? 0 : est - term;
	if (est < TLAB_MIN_CWND * 1000)
		est = TLAB_MIN_CWND * 1000;
	if (est > MAX_ESTIMATE_MILLI)
		est = MAX_ESTIMATE_MILLI;
	/* Dither: small while the slot just written is in the window's first half. */
	if (slot < n / 2) {
		dither = params.dither_small_milli;
	} else {
		dither = est * 1000 / params.dither_large_divisor_milli;
		if (dither < params.dither_large_min_milli)
			dither = params.dither_large_min_milli;
	}
	return (est + dither + 500) / 1000;
}

SEC("struct_ops/tlab_dc_pkts_acked")
void BPF_PROG(tlab_dc_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct tcp_sock *tp = tlab_tcp_sk(sk);
	struct bictcp *ca = tlab_ca_priv(sk);
	struct dc_state *s;
	__u64 x, y, mss;
	__u32 slot, packets;
	__s64 decision;

	cubictcp_acked(sk, sample);
	s = state_of(sk);
	if (!s || sample->rtt_us <= 0 || !s->ca_open)
		return;
	mss = tp->mss_cache ? tp->mss_cache : 1;
	x = ((__u64)sample->in_flight + mss - 1) / mss;
	x = x < 1 ? 1 : (x > MAX_X ? MAX_X : x);
	y = sample->rtt_us > MAX_Y ? MAX_Y : sample->rtt_us;
	if (!sampled(s, tp->snd_cwnd))
		return;
	slot = push(s, x, y);
	if (s->count < params.window)
		return;
	decision = decide(s, slot, tp->rtt_min.s[0].v);
	if (decision < 0)
		return;
	if (decision == 0) {
		s->clamp_active = 0;
		return;
	}
	packets = decision > 0x7fffffff ? 0x7fffffff : decision;
	if (packets < TLAB_MIN_CWND)
		packets = TLAB_MIN_CWND;
	if (packets > tp->snd_cwnd_clamp)
		packets = tp->snd_cwnd_clamp;
	tp->snd_cwnd = packets;
	if (tp->snd_ssthresh > packets)
		tp->snd_ssthresh = packets;
	/* CUBIC starts a new epoch from the clamped window when growth resumes. */
	ca->epoch_start = 0;
	s->clamp_active = 1;
}

SEC("struct_ops/tlab_dc_cong_avoid")
void BPF_PROG(tlab_dc_cong_avoid, struct sock *sk, __u32 ack, __u32 acked)
{
	struct dc_state *s = state_of(sk);

	/* Clamped: CUBIC's increase is suppressed. */
	if (s && s->clamp_active)
		return;
	cubictcp_cong_avoid(sk, ack, acked);
}

SEC("struct_ops/tlab_dc_state")
void BPF_PROG(tlab_dc_state, struct sock *sk, __u8 new_state)
{
	struct dc_state *s = state_of(sk);

	cubictcp_state(sk, new_state);
	if (s)
		s->ca_open = new_state == TCP_CA_Open;
}

SEC("struct_ops/tlab_dc_cwnd_event")
void BPF_PROG(tlab_dc_cwnd_event, struct sock *sk, enum tcp_ca_event event)
{
	cubictcp_cwnd_event(sk, event);
}

TLAB_CC_OPS(tlab_delay_corr, tlab_dc, cubictcp_recalc_ssthresh, "tlab_dc_@@@@@@@");
