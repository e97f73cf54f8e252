"""Optimizer (Adam, AdamW, SGD with momentum) and loss from the recipe."""
from __future__ import annotations

import torch
import torch.nn.functional as F

from .common import TwinError, log, nonneg_int, one_line
from .recipe import label_smoothing
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


def make_optimizer(recipe, params, device, construct=None):
    """Optimizer from the recipe; fused (torch>=2.0 on CUDA, >=2.4 on CPU) > foreach >
    for-loop. Returns (optimizer, impl, why_not_fused or None). Defaults as
    models/recipe_schedule.cpp parse_optimizer (SGD momentum 0.9, dampening 0).
    construct(cls, params, **kw), when given, builds it instead of cls(params, **kw)
    (twin/dist.py: ZeroRedundancyOptimizer around cls)."""
    if construct is None:
        def construct(c, p, **k):
            return c(p, **k)
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
            return construct(cls, plist, fused=True, **kw), "fused", None
        except (RuntimeError, TypeError, ValueError) as e:
            no_fused = f"fused {cls.__name__} refused: {one_line(e)}"
            log(f"{no_fused}; trying foreach")
    if has_kwarg(cls.__init__, "foreach"):
        try:
            return construct(cls, plist, foreach=True, **kw), "foreach", no_fused
        except (RuntimeError, TypeError, ValueError) as e:
            log(f"foreach {cls.__name__} refused ({one_line(e)}); using the for-loop one")
    return construct(cls, plist, **kw), "for-loop", no_fused


def optimizer_params(recipe, params):
    """What make_optimizer gets for params [(name, Parameter, rule)]: the parameters in
    that order, or -- Adam / AdamW with optimizer.decay_min_rank > 0 -- twin/gpt.py's two
    groups, weight decay only on parameters of rank >= decay_min_rank (nn/optimizer.cpp's
    decay mask; 0 or absent = every parameter decays, SGD ignores it, as the C++ parser)."""
    o = recipe["optimizer"]
    plain = [p for _, p, _ in params]
    if "decay_min_rank" not in o or o["type"].lower() not in ("adam", "adamw"):
        return plain
    rank = nonneg_int(o["decay_min_rank"], "optimizer.decay_min_rank")
    if rank == 0:
        return plain
    from .gpt import param_groups
    return param_groups(params, rank, _num(o, "weight_decay", 0.0))


def make_loss(recipe, num_classes):
    name = recipe.get("loss", "softmax_cross_entropy")
    eps = label_smoothing(recipe)
    if name == "softmax_cross_entropy":
        # label_smoothing only when set: eps 0 keeps the call (and the kernels) of before.
        kw = {"label_smoothing": eps} if eps > 0.0 else {}

        def ce(out, y, reduction="mean"):
            return F.cross_entropy(out.float(), y, reduction=reduction, **kw)
        return ce
    if eps > 0.0:
        raise TwinError(f"recipe: label_smoothing applies to softmax_cross_entropy, not to "
                        f"loss '{name}'")
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
