#!/usr/bin/env python3
"""Philox4x32-10 for the PyTorch twin, bit-exact with kernels/common/philox.h.

The project has one RNG (DESIGN.md rule 4, docs/rng.md): every random number is a pure
function of (seed, purpose, stream, index). This module mirrors the C++/CUDA header in
numpy, vectorised over the block index, so the twin can start from the same weights and
walk the same batch order as the trainer.

  key     = (seed & 0xffffffff, seed >> 32)
  counter = (index, stream, purpose, 0)      index counts 4-word blocks
  word i of a stream = word (i % 4) of block (i / 4)
  unit float = (word >> 8) * 2^-24, float32, in [0, 1)

All arithmetic on counters and keys is done in uint64 and masked to 32 bits, so the
32x32->64 products of mulhilo are exact. Only numpy is needed (no torch).

CLI (for cross-checks against the C++ side):
  philox.py selftest                          Random123 known-answer vectors; exit 1 on failure
  philox.py shuffle SEED EPOCH N              the epoch's permutation, one line, space-separated
  philox.py words SEED PURPOSE STREAM COUNT   the first COUNT words of a stream, one line,
                                              space-separated 8-digit lowercase hex
  philox.py windows SEED STEP ROWS N T        batch_window_start of rows 0..ROWS-1 at STEP for a
                                              corpus of N tokens, context T (one line, decimal)
  philox.py normal SEED P COUNT STD           the first COUNT Normal(0, STD) init values of
                                              parameter P, as 8-digit hex float32 bit patterns
"""
from __future__ import annotations

import math
import sys

import numpy as np

__all__ = [
    "PURPOSE_INIT", "PURPOSE_SHUFFLE", "PURPOSE_DROPOUT", "PURPOSE_BATCH_WINDOW",
    "PURPOSE_AUGMENT", "philox4x32_10", "block", "words", "unit_float", "unit_floats",
    "shuffle_keys", "shuffle_order", "kaiming_uniform", "xavier_uniform", "dropout_words",
    "dropout_keep", "augment_draws", "batch_window_starts", "normal_init", "selftest",
]

# RngPurpose in kernels/common/philox.h
PURPOSE_INIT = 1          # parameter initialisation; stream = parameter index
PURPOSE_SHUFFLE = 2       # per-epoch permutation; stream = epoch (0-based)
PURPOSE_DROPOUT = 3       # stream = step; fourth counter word = dropout layer index
PURPOSE_BATCH_WINDOW = 4  # autoregressive window starts; stream = step
PURPOSE_AUGMENT = 5       # crop/flip; stream = epoch

_MUL0 = np.uint64(0xD2511F53)
_MUL1 = np.uint64(0xCD9E8D57)
_WEYL0 = 0x9E3779B9
_WEYL1 = 0xBB67AE85
_M32 = np.uint64(0xFFFFFFFF)
_S32 = np.uint64(32)
_MASK32 = 0xFFFFFFFF
_MASK64 = 0xFFFFFFFFFFFFFFFF


def _as_u64(x) -> np.ndarray:
    """Counter word(s) as a uint64 array holding a 32-bit value (scalars broadcast)."""
    if isinstance(x, (int, np.integer)):
        return np.asarray(int(x) & _MASK32, dtype=np.uint64)
    a = np.asarray(x)
    if a.dtype.kind not in "ui":
        raise TypeError(f"philox counter words must be integers, got dtype {a.dtype}")
    return a.astype(np.uint64) & _M32


def philox4x32_10(c0, c1, c2, c3, k0: int, k1: int):
    """The raw block function: counter (c0..c3), key (k0, k1) -> 4 uint32 arrays.

    Counter words may be Python ints or integer arrays (broadcast together); the key is
    two Python ints. Mirrors philox4x32_10() in kernels/common/philox.h line for line.
    """
    c0, c1, c2, c3 = np.broadcast_arrays(_as_u64(c0), _as_u64(c1), _as_u64(c2), _as_u64(c3))
    c0, c1, c2, c3 = (np.array(c, dtype=np.uint64) for c in (c0, c1, c2, c3))
    k0 = int(k0) & _MASK32
    k1 = int(k1) & _MASK32
    for rnd in range(10):
        if rnd > 0:
            k0 = (k0 + _WEYL0) & _MASK32
            k1 = (k1 + _WEYL1) & _MASK32
        p0 = _MUL0 * c0          # < 2^64: exact in uint64
        p1 = _MUL1 * c2
        hi0, lo0 = p0 >> _S32, p0 & _M32
        hi1, lo1 = p1 >> _S32, p1 & _M32
        n0 = hi1 ^ c1 ^ np.uint64(k0)
        n2 = hi0 ^ c3 ^ np.uint64(k1)
        c0, c1, c2, c3 = n0, lo1, n2, lo0
    return tuple(c.astype(np.uint32) for c in (c0, c1, c2, c3))


def _key(seed: int):
    seed = int(seed)
    if seed < 0 or seed > _MASK64:
        raise ValueError(f"seed must be a uint64, got {seed}")
    return seed & _MASK32, (seed >> 32) & _MASK32


def block(seed: int, purpose: int, stream: int, index):
    """philox_block(seed, purpose, stream, index): 4 uint32 arrays, one per output word.

    `index` (the block counter, 4 words per block) may be an int or an integer array.
    """
    k0, k1 = _key(seed)
    return philox4x32_10(index, stream, purpose, 0, k0, k1)


def words(seed: int, purpose: int, stream: int, count: int, start: int = 0) -> np.ndarray:
    """Words start .. start+count-1 of a stream (uint32): word i = word i%4 of block i/4."""
    count = int(count)
    start = int(start)
    if count < 0 or start < 0:
        raise ValueError("count and start must be >= 0")
    if count == 0:
        return np.zeros(0, dtype=np.uint32)
    first_block = start >> 2
    last_block = (start + count - 1) >> 2
    if last_block > _MASK32:
        raise ValueError("stream index exceeds the 32-bit block counter")
    idx = np.arange(first_block, last_block + 1, dtype=np.uint64)
    out = block(seed, purpose, stream, idx)
    flat = np.stack(out, axis=1).reshape(-1)   # block-major, word-minor
    off = start - (first_block << 2)
    return flat[off:off + count].copy()


def unit_float(w) -> np.ndarray:
    """u32_to_unit_float: (w >> 8) * 2^-24 as float32 in [0, 1). Exact (24-bit mantissa)."""
    w = np.asarray(w, dtype=np.uint32)
    return (w >> np.uint32(8)).astype(np.float32) * np.float32(1.0 / 16777216.0)


def unit_floats(seed: int, purpose: int, stream: int, count: int, start: int = 0) -> np.ndarray:
    """unit_float of words start .. start+count-1 of a stream."""
    return unit_float(words(seed, purpose, stream, count, start))


def shuffle_keys(seed: int, epoch: int, n: int) -> np.ndarray:
    """shuffle_key(seed, epoch, i) for i in 0..n-1: (out[1] << 32) | out[0], uint64."""
    n = int(n)
    if n < 0 or n > _MASK32 + 1:
        raise ValueError(f"n out of range: {n}")
    o = block(seed, PURPOSE_SHUFFLE, epoch, np.arange(n, dtype=np.uint64))
    return (o[1].astype(np.uint64) << _S32) | o[0].astype(np.uint64)


def shuffle_order(seed: int, epoch: int, n: int) -> np.ndarray:
    """Epoch `epoch` (0-based) order of n samples: stable ascending argsort of the keys."""
    return np.argsort(shuffle_keys(seed, epoch, n), kind="stable").astype(np.int64)


def _uniform_pm1(seed: int, param_index: int, numel: int) -> np.ndarray:
    """2u - 1 in float32, u = unit_float(word j of stream param_index, purpose init).

    2.0f*u is exact and 2u-1 is exact for u = k*2^-24, so this equals the C++
    `2.0f*u - 1.0f` with or without FMA contraction.
    """
    u = unit_floats(seed, PURPOSE_INIT, param_index, numel)
    return np.float32(2.0) * u - np.float32(1.0)


def _shaped(flat: np.ndarray, shape) -> np.ndarray:
    return flat.reshape(tuple(int(s) for s in shape))


def kaiming_uniform(seed: int, param_index: int, shape, fan_in: int) -> np.ndarray:
    """w_j = (2u_j - 1) * bound, bound = (float)sqrt(6.0 / fan_in); float32, row-major.

    Matches C++ `(2.0f*u - 1.0f) * bound` bit for bit: bound is rounded once from a
    double sqrt, the product is one float32 multiplication.
    """
    if int(fan_in) <= 0:
        raise ValueError(f"fan_in must be positive, got {fan_in}")
    numel = int(np.prod([int(s) for s in shape], dtype=np.int64))
    bound = np.float32(math.sqrt(6.0 / int(fan_in)))
    w = _uniform_pm1(seed, param_index, numel) * bound
    return _shaped(w.astype(np.float32, copy=False), shape)


def xavier_uniform(seed: int, param_index: int, shape, fan_in: int, fan_out: int) -> np.ndarray:
    """w_j = (2u_j - 1) * (float)sqrt(6.0 / (fan_in + fan_out)); float32, row-major."""
    if int(fan_in) + int(fan_out) <= 0:
        raise ValueError(f"fan_in + fan_out must be positive, got {fan_in} + {fan_out}")
    numel = int(np.prod([int(s) for s in shape], dtype=np.int64))
    bound = np.float32(math.sqrt(6.0 / (int(fan_in) + int(fan_out))))
    w = _uniform_pm1(seed, param_index, numel) * bound
    return _shaped(w.astype(np.float32, copy=False), shape)


def dropout_words(seed: int, step: int, layer: int, count: int) -> np.ndarray:
    """dropout_word(seed, step, layer, i) for i in 0..count-1 (kernels/common/philox.h):
    word i % 4 of the block with counter (i // 4, step, PURPOSE_DROPOUT, layer)."""
    count = int(count)
    if count < 0:
        raise ValueError("count must be >= 0")
    if count == 0:
        return np.zeros(0, dtype=np.uint32)
    nblocks = (count + 3) >> 2
    if nblocks - 1 > _MASK32:
        raise ValueError("dropout element index exceeds the 32-bit block counter")
    k0, k1 = _key(seed)
    out = philox4x32_10(np.arange(nblocks, dtype=np.uint64), step, PURPOSE_DROPOUT, layer,
                        k0, k1)
    return np.stack(out, axis=1).reshape(-1)[:count].copy()


def dropout_keep(seed: int, step: int, layer: int, count: int, p) -> np.ndarray:
    """dropout_keep for elements 0..count-1: unit_float(word) >= p, p as float32 (bool)."""
    return unit_float(dropout_words(seed, step, layer, count)) >= np.float32(p)


def augment_draws(seed: int, epoch: int, n: int, pad: int, flip: bool):
    """augment_draw (kernels/common/augment.h) for samples 0..n-1 of `epoch`: block i of
    stream epoch, purpose augment; top = w0 % (2 pad + 1), left = w1 % (2 pad + 1),
    flip = flip and (w2 & 1). Returns (top int64, left int64, flip bool) arrays."""
    if int(pad) < 0:
        raise ValueError(f"pad must be >= 0, got {pad}")
    b = block(seed, PURPOSE_AUGMENT, epoch, np.arange(int(n), dtype=np.uint64))
    span = np.uint32(2 * int(pad) + 1)
    top = (b[0] % span).astype(np.int64)
    left = (b[1] % span).astype(np.int64)
    flips = (b[2] & np.uint32(1)).astype(bool) if flip else np.zeros(int(n), dtype=bool)
    return top, left, flips


def batch_window_starts(seed: int, step, rows: int, n: int, context: int) -> np.ndarray:
    """batch_window_start (kernels/common/batch_window.h) of rows 0..rows-1: word r of
    stream `step`, purpose 4, modulo (n - context) as unsigned 64-bit. `step` an int ->
    shape (rows,); an array of steps -> shape (len(step), rows). int64."""
    span = int(n) - int(context)
    if span <= 0:
        raise ValueError(f"a corpus of {n} tokens has no window of {context}+1 tokens")
    scalar = isinstance(step, (int, np.integer))
    steps = np.atleast_1d(np.asarray(step)).astype(np.uint64)
    rows = int(rows)
    nb = (rows + 3) >> 2
    k0, k1 = _key(seed)
    out = philox4x32_10(np.arange(nb, dtype=np.uint64)[None, :], steps[:, None],
                        PURPOSE_BATCH_WINDOW, 0, k0, k1)
    w = np.stack(out, axis=-1).reshape(len(steps), nb * 4)[:, :rows]
    starts = (w.astype(np.uint64) % np.uint64(span)).astype(np.int64)
    return starts[0] if scalar else starts


def _normal_scalar(w0: int, w1: int, odd: bool, std: float) -> np.float32:
    """One element of normal_init with Python's math (the C library's log/sqrt/cos/sin)."""
    u1 = (float(w0 >> 8) + 1.0) / 16777217.0
    u2 = float(w1 >> 8) / 16777216.0
    r = math.sqrt(-2.0 * math.log(u1))
    z = r * math.sin(2.0 * math.pi * u2) if odd else r * math.cos(2.0 * math.pi * u2)
    return np.float32(z * std)


def normal_init(seed: int, param_index: int, shape, std: float) -> np.ndarray:
    """Normal(0, std) init (docs/rng.md, nn/init.cpp), float32 row-major. Element i uses
    words 2k, 2k+1 (k = i // 2) of stream param_index, purpose init:
      u1 = ((w0 >> 8) + 1) / 16777217,  u2 = (w1 >> 8) / 16777216,  r = sqrt(-2 ln u1),
      z = r cos(2 pi u2) (i even) | r sin(2 pi u2) (i odd),  value = float32(z * std),
    all in double. numpy's log/cos/sin may differ from the C library's by an ulp or two of
    a double; that can only matter where z * std lies within ~1e-12 (relative) of a
    float32 rounding boundary, so those few elements are recomputed with math (libm), the
    functions the C++ calls."""
    numel = int(np.prod([int(s) for s in shape], dtype=np.int64))
    std = float(std)
    half = (numel + 1) // 2
    w = words(seed, PURPOSE_INIT, param_index, 2 * half).reshape(half, 2)
    u1 = ((w[:, 0] >> np.uint32(8)).astype(np.float64) + 1.0) / 16777217.0
    u2 = (w[:, 1] >> np.uint32(8)).astype(np.float64) / 16777216.0
    r = np.sqrt(-2.0 * np.log(u1))
    z = np.stack([r * np.cos(2.0 * math.pi * u2), r * np.sin(2.0 * math.pi * u2)],
                 axis=1).reshape(-1)[:numel]
    v = z * std
    out = v.astype(np.float32)
    near = np.flatnonzero((v * (1.0 - 1e-12)).astype(np.float32)
                          != (v * (1.0 + 1e-12)).astype(np.float32))
    for i in near:
        out[i] = _normal_scalar(int(w[i // 2, 0]), int(w[i // 2, 1]), bool(i & 1), std)
    return _shaped(out, shape)


# Random123 known-answer vectors for philox4x32_10 (kat_vectors): counter, key, expected.
_KAT = [
    ((0x00000000, 0x00000000, 0x00000000, 0x00000000), (0x00000000, 0x00000000),
     (0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8)),
    ((0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff), (0xffffffff, 0xffffffff),
     (0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd)),
    ((0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344), (0xa4093822, 0x299f31d0),
     (0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1)),
]


def selftest(out=sys.stdout) -> bool:
    ok = True
    for ctr, key, want in _KAT:
        got = tuple(int(v) for v in philox4x32_10(*ctr, *key))
        good = got == want
        ok &= good
        print(f"{'ok  ' if good else 'FAIL'} ctr={' '.join(f'{c:08x}' for c in ctr)} "
              f"key={' '.join(f'{k:08x}' for k in key)} -> {' '.join(f'{g:08x}' for g in got)}"
              + ("" if good else f" (want {' '.join(f'{w:08x}' for w in want)})"), file=out)
    # The vectorised path must agree with the scalar one (index arrays vs ints).
    idx = np.array([0, 1, 2, 7, 0xffffffff], dtype=np.uint64)
    vec = block(0x123456789abcdef0, PURPOSE_SHUFFLE, 3, idx)
    for j, i in enumerate(idx):
        sc = block(0x123456789abcdef0, PURPOSE_SHUFFLE, 3, int(i))
        if any(int(vec[w][j]) != int(sc[w]) for w in range(4)):
            print(f"FAIL vectorised block {int(i)} differs from scalar", file=out)
            ok = False
    # words() must be word i%4 of block i/4, also from an unaligned start.
    w = words(7, PURPOSE_INIT, 2, 11, start=3)
    for j in range(11):
        i = 3 + j
        if int(w[j]) != int(block(7, PURPOSE_INIT, 2, i >> 2)[i & 3]):
            print(f"FAIL words() word {i}", file=out)
            ok = False
    perm = shuffle_order(1, 0, 1000)
    if not np.array_equal(np.sort(perm), np.arange(1000)):
        print("FAIL shuffle_order is not a permutation", file=out)
        ok = False
    # Dropout words: counter (i // 4, step, purpose 3, layer), word i % 4.
    dw = dropout_words(5, 9, 2, 10)
    k0, k1 = _key(5)
    for i in range(10):
        want = int(philox4x32_10(i >> 2, 9, PURPOSE_DROPOUT, 2, k0, k1)[i & 3])
        if int(dw[i]) != want:
            print(f"FAIL dropout_words word {i}", file=out)
            ok = False
    keep = dropout_keep(5, 9, 2, 4000, 0.25)
    if not 0.2 < 1.0 - keep.mean() < 0.3 or not dropout_keep(5, 9, 2, 100, 0.0).all():
        print("FAIL dropout_keep rate", file=out)
        ok = False
    # Augment draws: block i of stream epoch, purpose 5.
    top, left, fl = augment_draws(3, 2, 6, 4, True)
    for i in range(6):
        b = [int(v) for v in block(3, PURPOSE_AUGMENT, 2, i)]
        if (int(top[i]), int(left[i]), bool(fl[i])) != (b[0] % 9, b[1] % 9, bool(b[2] & 1)):
            print(f"FAIL augment_draws sample {i}", file=out)
            ok = False
    # Batch windows: word r of stream step, purpose 4, % (n - T); arrays of steps too.
    st = batch_window_starts(9, np.array([0, 5]), 7, 1000, 64)
    for j, s in enumerate((0, 5)):
        want = [int(v) % 936 for v in words(9, PURPOSE_BATCH_WINDOW, s, 7)]
        if [int(v) for v in st[j]] != want or \
                [int(v) for v in batch_window_starts(9, s, 7, 1000, 64)] != want:
            print(f"FAIL batch_window_starts step {s}", file=out)
            ok = False
    # Normal init: the vectorised path equals the libm scalar formula, element for element.
    nz = normal_init(3, 4, (1001,), 0.02)
    w = words(3, PURPOSE_INIT, 4, 1002)
    if any(nz[i] != _normal_scalar(int(w[i & ~1]), int(w[i | 1]), bool(i & 1), 0.02)
           for i in range(1001)) or not (abs(float(normal_init(3, 5, (20000,), 1.0).std())
                                         - 1.0) < 0.03):
        print("FAIL normal_init", file=out)
        ok = False
    print("selftest " + ("passed" if ok else "FAILED"), file=out)
    return ok


def _main(argv) -> int:
    usage = ("usage: philox.py selftest | shuffle SEED EPOCH N | "
             "words SEED PURPOSE STREAM COUNT | windows SEED STEP ROWS N T | "
             "normal SEED P COUNT STD")
    if not argv:
        print(usage, file=sys.stderr)
        return 2
    cmd, args = argv[0], argv[1:]
    if cmd == "normal" and len(args) == 4:
        try:
            seed, p, count, std = int(args[0], 0), int(args[1], 0), int(args[2], 0), float(args[3])
            vals = normal_init(seed, p, (count,), std)
        except ValueError as e:
            print(f"philox.py: {e}\n{usage}", file=sys.stderr)
            return 2
        print(" ".join(f"{int(v):08x}" for v in vals.view(np.uint32)))
        return 0
    try:
        ints = [int(a, 0) for a in args]
    except ValueError:
        print(f"philox.py: arguments must be integers: {' '.join(args)}\n{usage}", file=sys.stderr)
        return 2
    if cmd == "selftest" and not args:
        return 0 if selftest() else 1
    if cmd == "shuffle" and len(ints) == 3:
        seed, epoch, n = ints
        print(" ".join(str(int(v)) for v in shuffle_order(seed, epoch, n)))
        return 0
    if cmd == "words" and len(ints) == 4:
        seed, purpose, stream, count = ints
        print(" ".join(f"{int(v):08x}" for v in words(seed, purpose, stream, count)))
        return 0
    if cmd == "windows" and len(ints) == 5:
        seed, step, rows, n, t = ints
        try:
            starts = batch_window_starts(seed, step, rows, n, t)
        except ValueError as e:
            print(f"philox.py: {e}", file=sys.stderr)
            return 2
        print(" ".join(str(int(v)) for v in starts))
        return 0
    print(usage, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
