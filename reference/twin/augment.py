"""The Augmenter (kernels/common/augment.h, docs/rng.md "Augmentation"): per epoch, a copy
of the normalised training set with each sample randomly cropped from its image padded by
`pad` pixels on every side, then horizontally flipped on a coin toss. Sample i of epoch e:
b = Philox block (index i, stream e, purpose 5), top = b[0] % (2 pad + 1), left = b[1] %
(2 pad + 1), flip = horizontal_flip and b[2] odd;
  out(y, x) = padded(y + top, x' + left), x' = W - 1 - x if flip else x,
  padded(r, c) = src(r - pad, c - pad), or fill[c] outside the source,
fill[c] being what a u8 0 normalises to. Pure copies, so bit-exact on any device."""
from __future__ import annotations

import numpy as np
import torch

import philox

from .common import TwinError


def parse_augment(recipe):
    """The recipe's "augment" as (pad, flip), or None without one."""
    a = recipe.get("augment")
    if a is None:
        return None
    if not isinstance(a, dict):
        raise TwinError("recipe: 'augment' must be an object")
    known = {"random_crop_pad", "horizontal_flip"}
    unknown = sorted(set(a) - known)
    if unknown:
        raise TwinError(f"recipe: augment.{unknown[0]} is not known to the twin "
                        f"({', '.join(sorted(known))})")
    pad = a.get("random_crop_pad", 0)
    if not isinstance(pad, int) or isinstance(pad, bool) or pad < 0:
        raise TwinError("recipe: augment.random_crop_pad must be an integer >= 0")
    flip = a.get("horizontal_flip", False)
    if not isinstance(flip, bool):
        raise TwinError("recipe: augment.horizontal_flip must be true or false")
    return pad, flip


def draws(seed, epoch, n, pad, flip):
    """augment_draw for samples 0..n-1 of `epoch`: (top, left, flip) arrays."""
    return philox.augment_draws(seed, epoch, n, pad, flip)


class Augmenter:
    """Writes epoch e's augmented copy of `src` (N, C, H, W), never modified, into one
    buffer reused every epoch, `chunk` samples at a time (bounded scratch memory)."""

    def __init__(self, src, pad, flip, fill, seed, chunk=2048):
        if src.dim() != 4:
            raise TwinError(f"augmentation needs images (N, C, H, W), got {list(src.shape)}")
        self.src = src
        self.pad, self.flip, self.seed = int(pad), bool(flip), int(seed)
        n, c, h, w = src.shape
        self.chunk = max(1, min(int(chunk), n))
        self.fill = torch.from_numpy(np.asarray(fill, dtype=np.float32)).to(src.device)
        if self.fill.numel() != c:
            raise TwinError(f"augmentation: {self.fill.numel()} fill values for {c} channels")
        self.out = torch.empty_like(src)
        p = self.pad
        self.padded = torch.empty((self.chunk, c, h + 2 * p, w + 2 * p), dtype=src.dtype,
                                  device=src.device)
        self.ar_h = torch.arange(h, device=src.device)
        self.ar_w = torch.arange(w, device=src.device)
        self.rev_w = (w - 1) - self.ar_w

    def epoch(self, e, count=None):
        """The augmented copy of epoch e (0-based); the first `count` samples only when
        given (the rest of the buffer is then stale)."""
        n, c, h, w = self.src.shape
        n = n if count is None else min(int(count), n)
        p = self.pad
        top, left, flips = draws(self.seed, e, n, p, self.flip)
        dev = self.src.device
        top_t = torch.from_numpy(top).to(dev)
        left_t = torch.from_numpy(left).to(dev)
        flip_t = torch.from_numpy(flips).to(dev)
        fill = self.fill.view(1, c, 1, 1)
        with torch.no_grad():
            for s in range(0, n, self.chunk):
                e_ = min(s + self.chunk, n)
                b = e_ - s
                pad_buf = self.padded[:b]
                pad_buf.copy_(fill.expand(b, c, h + 2 * p, w + 2 * p))
                pad_buf[:, :, p:p + h, p:p + w].copy_(self.src[s:e_])
                rows = top_t[s:e_, None] + self.ar_h[None, :]                       # (b, H)
                xs = torch.where(flip_t[s:e_, None], self.rev_w[None, :], self.ar_w[None, :])
                cols = left_t[s:e_, None] + xs                                       # (b, W)
                tmp = pad_buf.gather(2, rows[:, None, :, None].expand(b, c, h, w + 2 * p))
                self.out[s:e_] = tmp.gather(3, cols[:, None, None, :].expand(b, c, h, w))
        return self.out
