"""Philox4x32-10 (Salmon et al., SC'11) in plain Python, written from the paper's round function
and checked against Random123's known-answer vectors, to draw the same sampled actions as
hpcml's regret matching (kernels/regret/math.hpp) without using its code."""

MASK = 0xFFFFFFFF
M0, M1 = 0xD2511F53, 0xCD9E8D57
W0, W1 = 0x9E3779B9, 0xBB67AE85

# (counter, key, output) from Random123's kat_vectors for philox4x32_10.
KNOWN_ANSWERS = [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((MASK, MASK, MASK, MASK), (MASK, MASK), (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
     (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
]


def philox4x32_10(counter, key):
    c0, c1, c2, c3 = counter
    k0, k1 = key
    for round_ in range(10):
        if round_:
            k0, k1 = (k0 + W0) & MASK, (k1 + W1) & MASK
        p0, p1 = M0 * c0, M1 * c2
        c0, c1, c2, c3 = (p1 >> 32) ^ c1 ^ k0, p1 & MASK, (p0 >> 32) ^ c3 ^ k1, p0 & MASK
    return c0, c1, c2, c3


def uniform_draw(seed, game, iteration, key):
    """A double in [0, 1) from 53 bits of Philox4x32-10 at counter (game, iteration, key)."""
    bits = philox4x32_10((game & MASK, game >> 32, iteration, key), (seed & MASK, seed >> 32))
    word = ((bits[0] << 21) ^ (bits[1] >> 11)) & ((1 << 53) - 1)
    return word * 2.0**-53


def sample(strategy, u):
    """The first action (skipping zero-probability ones) whose cumulative probability passes u."""
    cdf, last = 0.0, 0
    for k, p in enumerate(map(float, strategy)):
        if p <= 0:
            continue
        last = k
        cdf += p
        if u < cdf:
            return k
    return last
