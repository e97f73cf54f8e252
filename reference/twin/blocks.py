"""The torch modules the layer builders need beyond torch.nn: the ResNet basic block with
its option-A shortcut, and Dropout with Philox masks (docs/rng.md)."""
from __future__ import annotations

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

import philox

from .common import TwinError, Unavailable


def activation(name, where):
    """None for no activation ("none" or absent), else the module."""
    if name is None or name == "none":
        return None
    if name == "relu":
        return nn.ReLU()
    if name == "gelu":            # tanh approximation, as kernels/common/math.h computes it
        try:
            return nn.GELU(approximate="tanh")
        except TypeError:
            raise Unavailable("gelu needs torch>=1.12 (nn.GELU(approximate='tanh'))")
    raise TwinError(f"recipe: {where}: unknown act '{name}' (relu, gelu, none)")


def option_a_shortcut(x, stride, pad_channels):
    """F.pad(x[:, :, ::s, ::s], (0, 0, 0, 0, p, p)) (kernels/common/image_shapes.h)."""
    if stride != 1:
        x = x[:, :, ::stride, ::stride]
    if pad_channels:
        x = F.pad(x, (0, 0, 0, 0, pad_channels, pad_channels))
    return x


class BasicBlock(nn.Module):
    """conv3x3(stride) - bn - relu - conv3x3 - bn, + shortcut, relu. Registration order
    conv1, bn1, conv2, bn2 (the Philox streams and the checkpoint follow it)."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, stride=1, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.stride = stride
        self.identity = stride == 1 and cin == cout
        self.pad_channels = (cout - cin) // 2

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        sc = x if self.identity else option_a_shortcut(x, self.stride, self.pad_channels)
        return F.relu(out + sc)


class RunState:
    """What a module needs to know about the run: the seed and the 0-based optimizer step
    (Dropout's Philox stream). The training loop sets `step` before each step."""

    def __init__(self, seed=0):
        self.seed = int(seed)
        self.step = 0


def _dropout_mask(state, layer, shape, p, device):
    keep = philox.dropout_keep(state.seed, state.step, layer,
                               int(np.prod(shape, dtype=np.int64)), p)
    return torch.from_numpy(keep.reshape(tuple(shape)).astype(np.float32)).to(device)


_MASK_FN = []


def _mask_fn():
    """_dropout_mask, under torch.compile (torch>=2.0) kept out of the graph so the step
    number is read at run time (no guard on it, no recompilation per step). Looked up on
    first use: importing torch._dynamo costs seconds that eager runs need not pay."""
    if not _MASK_FN:
        fn = _dropout_mask
        if hasattr(torch, "compile"):
            try:
                import torch._dynamo as dynamo
                fn = dynamo.disable(fn)
            except Exception:   # noqa: BLE001 -- no dynamo: eager only, nothing to hide
                pass
        _MASK_FN.append(fn)
    return _MASK_FN[0]


class PhiloxDropout(nn.Module):
    """Training: y = x * mask, mask = keep * fp32(1 / (1 - p)) (torch's own dropout mask,
    kernels/common/philox.h dropout_scale), keep = unit_float(word i of block (i // 4,
    step, purpose 3, layer)) >= p for flat element i of the (B, ...) tensor
    (philox.dropout_keep); eval: identity. The mask is drawn with numpy on the host and
    uploaded (no recipe uses dropout yet; this is the exact, not the fast, path)."""

    def __init__(self, p, layer, state):
        super().__init__()
        self.p = float(np.float32(p))
        self.layer = int(layer)
        self.state = state
        one = np.float32(1.0)
        self.scale = float(one / (one - np.float32(self.p)))  # fp32, as dropout_scale

    def forward(self, x):
        if not self.training or self.p == 0.0:
            return x
        mask = _mask_fn()(self.state, self.layer, tuple(x.shape), self.p, x.device)
        return x * (mask * self.scale).to(x.dtype)

    def extra_repr(self):
        return f"p={self.p}, layer={self.layer}"
