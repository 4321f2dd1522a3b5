/* Integer arithmetic for the correlation layer (delay_correlation.bpf.c): BPF has no
 * floating point and its backend no 128-bit multiply or divide, so products of two u64
 * are formed and divided exactly here. */
/* The looping helpers are global (non-static) functions: the verifier checks each once,
 * not once per call site. */
#ifndef TLAB_MATH_H
#define TLAB_MATH_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

/* --- unsigned 128-bit arithmetic ----------------------------------------------------- */

struct u128 {
	__u64 hi;
	__u64 lo;
};

static __always_inline struct u128 u128_mul(__u64 a, __u64 b)
{
	__u64 a_lo = a & 0xffffffffULL, a_hi = a >> 32;
	__u64 b_lo = b & 0xffffffffULL, b_hi = b >> 32;
	__u64 p0 = a_lo * b_lo, p1 = a_lo * b_hi, p2 = a_hi * b_lo, p3 = a_hi * b_hi;
	__u64 mid = (p0 >> 32) + (p1 & 0xffffffffULL) + (p2 & 0xffffffffULL);
	struct u128 r;

	r.lo = (p0 & 0xffffffffULL) | (mid << 32);
	r.hi = p3 + (p1 >> 32) + (p2 >> 32) + (mid >> 32);
	return r;
}

static __always_inline int u128_lt(struct u128 a, struct u128 b)
{
	return a.hi < b.hi || (a.hi == b.hi && a.lo < b.lo);
}

/* a - b for a >= b. */
static __always_inline struct u128 u128_sub(struct u128 a, struct u128 b)
{
	struct u128 r;

	r.lo = a.lo - b.lo;
	r.hi = a.hi - b.hi - (a.lo < b.lo);
	return r;
}

/* floor(a / d), saturated at U64_MAX when the quotient does not fit; d > 0.
 * Restoring long division, one quotient bit per step (128 bounded steps). */
__noinline __u64 u128_div(__u64 a_hi, __u64 a_lo, __u64 d)
{
	__u64 rem = 0, q = 0;
	int i;

	if (d == 0 || a_hi >= d)
		return ~0ULL;
	rem = a_hi; /* < d: the quotient fits in 64 bits */
	for (i = 63; i >= 0; i--) {
		__u64 top = rem >> 63;

		rem = (rem << 1) | ((a_lo >> i) & 1);
		q <<= 1;
		if (top || rem >= d) {
			rem -= d;
			q |= 1;
		}
	}
	return q;
}

static __always_inline struct u128 u128_shr(struct u128 a, int s)
{
	struct u128 r;

	if (s <= 0)
		return a;
	if (s >= 128) {
		r.hi = 0;
		r.lo = 0;
	} else if (s >= 64) {
		r.lo = a.hi >> (s - 64);
		r.hi = 0;
	} else {
		r.lo = (a.lo >> s) | (a.hi << (64 - s));
		r.hi = a.hi >> s;
	}
	return r;
}

/* Number of significant bits. */
__noinline int bit_length(__u64 v)
{
	int n = 0, i;

	for (i = 0; i < 64 && v; i++) {
		v >>= 1;
		n++;
	}
	return n;
}

static __always_inline int u128_bit_length(struct u128 a)
{
	return a.hi ? 64 + bit_length(a.hi) : bit_length(a.lo);
}

/* floor(a·b / d), saturated. */
static __always_inline __u64 mul_div(__u64 a, __u64 b, __u64 d)
{
	struct u128 p = u128_mul(a, b);

	return u128_div(p.hi, p.lo, d);
}

/* SplitMix64, the congestion crate's generator (crates/congestion/src/prng.rs). */
static __always_inline __u64 splitmix64_next(__u64 *state)
{
	__u64 z;

	*state += 0x9E3779B97F4A7C15ULL;
	z = *state;
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
	return z ^ (z >> 31);
}

#endif
