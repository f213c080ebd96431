// The sorted method's per-element steps, shared by every backend (HPCML_HD): the sort key of a
// value, the two ends of a row's rank interval, and the bit-sliced counters' adders. The CPU
// tests exercise them directly; docs/similarity.md explains the method.
//
// For one sample and one x value a, d(v) = fl32(a - v) is non-increasing in v (rounding is
// monotone), so the y values v that pass |d(v)| < t are a run of y's sorted order: they are the
// ranks k with lo <= k < hi, where lo is the first rank whose value passes d < t and hi the first
// whose value fails d > -t. Both ends are found with the float predicate itself (never with
// a - t or a + t, which round differently), and, for sorted a, both are non-decreasing in a.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "common/hd.hpp"

namespace hpcml::detail::similarity::sorted {

// An unsigned key with the order of the float values (finite ones; -0 just below +0, which the
// predicate does not tell apart): a radix sort of keys sorts the values.
HPCML_HD inline std::uint32_t order_key(float value) {
    std::uint32_t bits;
    memcpy(&bits, &value, sizeof bits);
    return (bits & 0x80000000u) ? ~bits : bits | 0x80000000u;
}

// The value whose order_key is `key`.
HPCML_HD inline float from_order_key(std::uint32_t key) {
    const std::uint32_t bits = (key & 0x80000000u) ? key & 0x7fffffffu : ~key;
    float value;
    memcpy(&value, &bits, sizeof value);
    return value;
}

// Whether rank `v` lies before the interval's start: d = a - v does not pass d < t. For finite a
// and v that is d >= t (d is never NaN; an overflowed d is +-inf).
HPCML_HD inline bool before_interval(float a, float v, float threshold) { return !(a - v < threshold); }

// Whether rank `v` lies before the interval's end: d = a - v passes d > -t. The two together are
// |d| < t exactly (the negation of t is exact).
HPCML_HD inline bool before_interval_end(float a, float v, float threshold) { return a - v > -threshold; }

// Both predicates as one comparison, d > bound, for code that runs either end on the same path
// (the GPU's merge): d >= t is d > the float below t (no float lies between them), and d > -t
// is itself. `end` 0 is the interval's start, 1 its end; the threshold is finite.
HPCML_HD inline float end_bound(int end, float threshold) {
    return end == 0 ? nextafterf(threshold, -INFINITY) : -threshold;
}
HPCML_HD inline bool before_bound(float a, float v, float bound) { return a - v > bound; }

// The interval [lo, hi) of sorted values v[0 .. count) for a, by linear scans from a start known
// to be at or before each end (0, or the ends of a smaller a): the reference the kernels' window
// searches are tested against, and their fallback.
struct Interval {
    std::uint32_t lo = 0, hi = 0;
};
HPCML_HD inline Interval interval_from(float a, const float* v, std::uint32_t count, float threshold,
                                       Interval start = {}) {
    Interval r = start;
    while (r.lo < count && before_interval(a, v[r.lo], threshold)) ++r.lo;
    if (r.hi < r.lo) r.hi = r.lo;
    while (r.hi < count && before_interval_end(a, v[r.hi], threshold)) ++r.hi;
    return r;
}

// A full adder on bit-sliced words (any type with & | ^: an integer, or a vector of them): the
// sum bit of a + b + c, and its carry. One instruction each where the machine has a three-input
// logic op (VPTERNLOG, LOP3).
template <class Word>
HPCML_HD inline Word sum3(Word a, Word b, Word c) {
    return a ^ b ^ c;
}
template <class Word>
HPCML_HD inline Word carry3(Word a, Word b, Word c) {
    return (a & b) | (c & (a ^ b));
}

// The bit-sliced sum of 16 one-bit words (16 samples' masks): s[p] holds bit p of the count of
// ones at each position (a carry-save tree of 15 full adders and half adders).
template <class Word>
HPCML_HD inline void add16(const Word* m, Word* s) {
    // Five full adders take 15 of the ones to 5 ones and 5 twos; then ones, twos, fours and
    // eights in turn, each level's carries the next level's inputs.
    Word a1 = sum3(m[0], m[1], m[2]), a2 = carry3(m[0], m[1], m[2]);
    Word b1 = sum3(m[3], m[4], m[5]), b2 = carry3(m[3], m[4], m[5]);
    Word c1 = sum3(m[6], m[7], m[8]), c2 = carry3(m[6], m[7], m[8]);
    Word d1 = sum3(m[9], m[10], m[11]), d2 = carry3(m[9], m[10], m[11]);
    Word e1 = sum3(m[12], m[13], m[14]), e2 = carry3(m[12], m[13], m[14]);
    // ones: a1 b1 c1 d1 e1 m15
    Word f1 = sum3(a1, b1, c1), f2 = carry3(a1, b1, c1);
    Word g1 = sum3(d1, e1, m[15]), g2 = carry3(d1, e1, m[15]);
    s[0] = f1 ^ g1;
    const Word h2 = f1 & g1;
    // twos: a2 b2 c2 d2 e2 f2 g2 h2
    Word i2 = sum3(a2, b2, c2), i4 = carry3(a2, b2, c2);
    Word j2 = sum3(d2, e2, f2), j4 = carry3(d2, e2, f2);
    Word k2 = sum3(g2, h2, i2), k4 = carry3(g2, h2, i2);
    s[1] = j2 ^ k2;
    const Word l4 = j2 & k2;
    // fours: i4 j4 k4 l4
    Word m4 = sum3(i4, j4, k4), m8 = carry3(i4, j4, k4);
    s[2] = m4 ^ l4;
    const Word n8 = m4 & l4;
    // eights: m8 n8
    s[3] = m8 ^ n8;
    s[4] = m8 & n8;
}

// counters[0 .. planes) += the 5-plane number s (add16's), ripple-carry; the caller sizes the
// planes for the largest count, so the last carry is zero.
template <class Word>
HPCML_HD inline void add_planes(Word* counters, const Word* s, unsigned planes) {
    Word carry = counters[0] & s[0];
    counters[0] = counters[0] ^ s[0];
    unsigned p = 1;
    for (; p < 5 && p < planes; ++p) {
        const Word c = counters[p];
        counters[p] = sum3(c, s[p], carry);
        carry = carry3(c, s[p], carry);
    }
    for (; p < planes; ++p) {
        const Word c = counters[p];
        counters[p] = c ^ carry;
        carry = c & carry;
    }
}

// Bits per counter for counts up to `samples`.
HPCML_HD inline unsigned counter_planes(std::uint64_t samples) {
    unsigned planes = 1;
    while (planes < 64 && (samples >> planes) != 0) ++planes;
    return planes;
}

}  // namespace hpcml::detail::similarity::sorted
