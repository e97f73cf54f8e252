"""Optimizer (Adam, AdamW, SGD with momentum) and loss from the recipe."""
from __future__ import annotations

import torch
import torch.nn.functional as F

from .common import TwinError, log, one_line
from .torch_env import has_kwarg, torch_version_tuple

# torch.optim's fused kernels: CUDA since torch 2.0, CPU since torch 2.4 (Adam, AdamW, SGD).
FUSED_MIN_TORCH = {"cuda": (2, 0), "cpu": (2, 4)}


def fused_unavailable_reason(cls, device):
    """None when fused=True is worth trying for cls on device, else why not (one line)."""
    need = FUSED_MIN_TORCH.get(device)
    have = torch_version_tuple(torch)
    if need is None:
        return f"no fused {cls.__name__} on {device}"
    if have < need:
        return (f"fused {cls.__name__} on {device} needs torch>={need[0]}.{need[1]}, "
                f"found {torch.__version__}")
    if not has_kwarg(cls.__init__, "fused"):
        return f"{cls.__name__} of torch {torch.__version__} has no fused= argument"
    return None


def _num(o, key, default):
    v = o.get(key, default)
    if not isinstance(v, (int, float)) or isinstance(v, bool):
        raise TwinError(f"recipe: optimizer.{key} must be a number")
    return float(v)


def make_optimizer(recipe, params, device):
    """Optimizer from the recipe; fused (torch>=2.0 on CUDA, >=2.4 on CPU) > foreach >
    for-loop. Returns (optimizer, impl, why_not_fused or None). Defaults as
    models/recipe_schedule.cpp parse_optimizer (SGD momentum 0.9, dampening 0)."""
    o = recipe["optimizer"]
    typ = o["type"].lower()
    lr = _num(o, "lr", 1e-3)
    wd = _num(o, "weight_decay", 0.0)
    if typ in ("adam", "adamw"):
        cls = torch.optim.Adam if typ == "adam" else torch.optim.AdamW
        betas = o.get("betas", [0.9, 0.999])
        if not isinstance(betas, list) or len(betas) != 2:
            raise TwinError("recipe: optimizer.betas must have two values")
        kw = {"lr": lr, "betas": tuple(float(b) for b in betas),
              "eps": _num(o, "eps", 1e-8), "weight_decay": wd}
    elif typ == "sgd":
        cls = torch.optim.SGD
        momentum = _num(o, "momentum", 0.9)
        kw = {"lr": lr, "momentum": momentum, "dampening": 0.0, "weight_decay": wd}
        if o.get("nesterov"):
            if not momentum > 0.0:
                raise TwinError("recipe: optimizer.nesterov needs a positive momentum")
            kw["nesterov"] = True
    else:
        raise TwinError(f"recipe: optimizer type '{o['type']}' unknown (adam, adamw, sgd)")
    plist = list(params)
    no_fused = fused_unavailable_reason(cls, device)
    if no_fused is None:
        try:
            return cls(plist, fused=True, **kw), "fused", None
        except (RuntimeError, TypeError, ValueError) as e:
            no_fused = f"fused {cls.__name__} refused: {one_line(e)}"
            log(f"{no_fused}; trying foreach")
    if has_kwarg(cls.__init__, "foreach"):
        try:
            return cls(plist, foreach=True, **kw), "foreach", no_fused
        except (RuntimeError, TypeError, ValueError) as e:
            log(f"foreach {cls.__name__} refused ({one_line(e)}); using the for-loop one")
    return cls(plist, **kw), "for-loop", no_fused


def make_loss(recipe, num_classes):
    name = recipe.get("loss", "softmax_cross_entropy")
    if name == "softmax_cross_entropy":
        def ce(out, y, reduction="mean"):
            return F.cross_entropy(out.float(), y, reduction=reduction)
        return ce
    if name == "mse":
        # Classification data: targets are one-hot rows; mean over all elements
        # (reduction='sum' divided by the batch gives the per-sample sum for eval).
        def mse(out, y, reduction="mean"):
            t = F.one_hot(y, num_classes).to(torch.float32)
            if reduction == "sum":
                return F.mse_loss(out.float(), t, reduction="sum") / num_classes
            return F.mse_loss(out.float(), t, reduction=reduction)
        return mse
    raise TwinError(f"recipe: loss '{name}' unknown (softmax_cross_entropy, mse)")
