"""Initial weights from Philox (docs/rng.md): parameter p (registration order) draws from
stream p, purpose init. Weights: the recipe's init with the layer's fans (conv: fan_in =
Cin*kh*kw, fan_out = Cout*kh*kw); biases and BatchNorm shifts 0; BatchNorm scales 1;
running statistics 0 (mean) and 1 (variance)."""
from __future__ import annotations

import torch

import philox

from .common import TwinError

INITS = ("kaiming_uniform", "xavier_uniform")


def init_params_philox(params, buffers, init, seed):
    if init not in INITS:
        raise TwinError(f"recipe: init '{init}' is not supported by the twin "
                        f"({', '.join(INITS)})")
    with torch.no_grad():
        for p_index, (_, p, rule) in enumerate(params):
            shape = tuple(p.shape)
            if rule["kind"] == "zeros":
                p.zero_()
            elif rule["kind"] == "ones":
                p.fill_(1.0)
            elif init == "kaiming_uniform":
                p.copy_(torch.from_numpy(
                    philox.kaiming_uniform(seed, p_index, shape, rule["fan_in"])))
            else:
                p.copy_(torch.from_numpy(philox.xavier_uniform(
                    seed, p_index, shape, rule["fan_in"], rule["fan_out"])))
        reset_buffers(buffers)


def reset_buffers(buffers):
    with torch.no_grad():
        for name, t in buffers:
            t.fill_(1.0 if name.endswith("running_var") else 0.0)
