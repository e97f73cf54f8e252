"""Recipes (models/recipes/<model>.json): loading, the checks the twin needs, the recipe
hash, and the learning-rate schedule (kernels/common/schedule.h, models/recipe_schedule.cpp)."""
from __future__ import annotations

import json
import math

from .common import TwinError


def req(d, key, what, typ):
    if key not in d:
        raise TwinError(f"recipe: missing '{key}' in {what}")
    v = d[key]
    if not isinstance(v, typ) or (isinstance(v, bool) and typ is not bool):
        raise TwinError(f"recipe: '{key}' in {what} has the wrong type ({type(v).__name__})")
    return v


def load_recipe(path):
    try:
        with open(path, "r", encoding="utf-8") as f:
            r = json.load(f)
    except FileNotFoundError:
        raise TwinError(f"recipe file not found: {path}")
    except json.JSONDecodeError as e:
        raise TwinError(f"recipe {path} is not valid JSON: {e}")
    if not isinstance(r, dict):
        raise TwinError(f"recipe {path}: top level must be an object")
    if is_lm(r):
        gpt_config(r)          # checked now; the run reads it again
        return r
    label_smoothing(r)
    if is_vit(r):
        vit_config(r)          # checked now; twin/vit.py reads it again
        return r
    req(r, "layers", "recipe", list)
    req(r, "input_shape", "recipe", list)
    req(r, "batch", "recipe", int)
    req(r, "epochs", "recipe", int)
    ds = req(r, "dataset", "recipe", dict)
    req(ds, "name", "dataset", str)
    opt = req(r, "optimizer", "recipe", dict)
    req(opt, "type", "optimizer", str)
    if r["batch"] < 1:
        raise TwinError("recipe: batch must be >= 1")
    if not r["layers"]:
        raise TwinError("recipe: 'layers' is empty")
    return r


def is_lm(recipe) -> bool:
    """The gpt family: a language model over a token corpus, trained for a number of steps
    (no layers list, no epochs)."""
    return recipe.get("family") == "gpt"


def is_vit(recipe) -> bool:
    """The vit family: a Vision Transformer classifier (no layers list; twin/vit.py)."""
    return recipe.get("family") == "vit"


def label_smoothing(r) -> float:
    """A classification recipe's top-level label_smoothing eps in [0, 1) (torch's
    F.cross_entropy label_smoothing); 0 when absent."""
    v = r.get("label_smoothing", 0.0)
    if not isinstance(v, (int, float)) or isinstance(v, bool) or not 0.0 <= v < 1.0:
        raise TwinError(f"recipe: label_smoothing must be a number in [0, 1), got {v!r}")
    return float(v)


def _number(v, what, minimum=None):
    if not isinstance(v, (int, float)) or isinstance(v, bool) or \
            (minimum is not None and not v >= minimum):
        raise TwinError(f"recipe: {what} must be a number" +
                        ("" if minimum is None else f" >= {minimum}") + f", got {v!r}")
    return float(v)


def gpt_config(r):
    """The gpt family's recipe (models/recipes/gpt*.json), checked, as a dict."""
    from .common import nonneg_int, positive_int
    req(r, "dataset", "recipe", dict)
    req(r["dataset"], "name", "dataset", str)
    m = req(r, "model", "recipe", dict)
    opt = req(r, "optimizer", "recipe", dict)
    req(opt, "type", "optimizer", str)
    c = {k: positive_int(m.get(k), f"model.{k}") for k in ("layers", "heads", "width", "context")}
    if c["width"] % c["heads"]:
        raise TwinError(f"recipe: model.width {c['width']} is not a multiple of model.heads "
                        f"{c['heads']}")
    c["bias"] = m.get("bias", False)
    if not isinstance(c["bias"], bool):
        raise TwinError("recipe: model.bias must be true or false")
    if m.get("tied_head", True) is not True:
        raise TwinError("recipe: model.tied_head false is not supported (the gpt family ties "
                        "the output head to wte)")
    if _number(m.get("dropout", 0.0), "model.dropout", 0.0) != 0.0:
        raise TwinError("recipe: model.dropout must be 0 for the gpt family (no dropout "
                        "streams are defined for it)")
    if r.get("init", "normal") != "normal":
        raise TwinError(f"recipe: init '{r.get('init')}' is not supported by the gpt family "
                        "(normal)")
    c["init_std"] = _number(r.get("init_std", 0.02), "init_std", 0.0)
    c["batch"] = positive_int(r.get("batch"), "batch")
    c["steps"] = positive_int(r.get("steps"), "steps")
    c["eval_interval"] = positive_int(r.get("eval_interval", c["steps"]), "eval_interval")
    c["eval_windows"] = nonneg_int(r.get("eval_windows", 0), "eval_windows")
    c["decay_min_rank"] = nonneg_int(opt.get("decay_min_rank", 2), "optimizer.decay_min_rank")
    c["grad_clip"] = _number(opt.get("grad_clip", 0.0), "optimizer.grad_clip", 0.0)
    return c


def vit_config(r):
    """The vit family's recipe (models/recipes/vit*.json), checked, as a dict: patch p,
    width C, heads, mlp_ratio r, layers L, bias, init_std; the image (channels, height,
    width), num_classes, and the derived grid (gh, gw), patches N and patch_dim D = Cin p p."""
    from .common import positive_int
    ds = req(r, "dataset", "recipe", dict)
    req(ds, "name", "dataset", str)
    m = req(r, "model", "recipe", dict)
    opt = req(r, "optimizer", "recipe", dict)
    req(opt, "type", "optimizer", str)
    c = {k: positive_int(m.get(k), f"model.{k}")
         for k in ("patch", "width", "heads", "mlp_ratio", "layers")}
    if c["width"] % c["heads"]:
        raise TwinError(f"recipe: model.width {c['width']} is not a multiple of model.heads "
                        f"{c['heads']}")
    c["bias"] = m.get("bias", False)
    if not isinstance(c["bias"], bool):
        raise TwinError("recipe: model.bias must be true or false")
    shape = req(r, "input_shape", "recipe", list)
    if len(shape) != 3:
        raise TwinError(f"recipe: the vit family needs an image input_shape [C, H, W], got "
                        f"{shape}")
    cin, h, w = (positive_int(v, f"input_shape[{i}]") for i, v in enumerate(shape))
    p = c["patch"]
    if h % p or w % p:
        raise TwinError(f"recipe: input_shape {shape}: height and width must be multiples "
                        f"of model.patch {p}")
    if r.get("init", "normal") != "normal":
        raise TwinError(f"recipe: init '{r.get('init')}' is not supported by the vit family "
                        "(normal)")
    c["init_std"] = _number(r.get("init_std", 0.02), "init_std", 0.0)
    c["num_classes"] = positive_int(r.get("num_classes", 10), "num_classes")
    c["batch"] = positive_int(r.get("batch"), "batch")
    positive_int(r.get("epochs"), "epochs")
    c.update({"channels": cin, "height": h, "width_px": w, "gh": h // p, "gw": w // p,
              "patches": (h // p) * (w // p), "patch_dim": cin * p * p})
    return c


def _fnv1a64(data: bytes) -> str:
    h = 0xCBF29CE484222325
    for b in data:
        h ^= b
        h = (h * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


def recipe_hash(recipe) -> str:
    """Best-effort copy of the C++ recipe_hash (FNV-1a 64 of the canonical JSON dump)."""
    canon = json.dumps(recipe, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return _fnv1a64(canon.encode("utf-8"))


# --------------------------------------------------------------------------- schedule

MAX_MILESTONES = 4   # LrSchedule::kMaxMilestones


def _int_list(v, what):
    if not isinstance(v, list) or any(not isinstance(x, int) or isinstance(x, bool) for x in v):
        raise TwinError(f"recipe: {what} must be a list of integers")
    return [int(x) for x in v]


def _int_field(v, what):
    if not isinstance(v, int) or isinstance(v, bool):
        raise TwinError(f"recipe: {what} must be an integer")
    return int(v)


class Schedule:
    """The recipe's schedule as written (units still epochs or steps); `resolve` turns it
    into a LrFunction for a run of known length."""

    def __init__(self, spec):
        at = "optimizer.schedule"
        self.kind = "constant"
        self.milestones = []
        self.milestone_epochs = True
        self.gamma = 0.1
        self.warmup = 0
        self.warmup_epochs = False
        self.min_lr = 0.0
        if isinstance(spec, str):
            self.kind = spec
        elif isinstance(spec, dict):
            self.kind = spec.get("type", "constant")
            if not isinstance(self.kind, str):
                raise TwinError(f"recipe: {at}.type must be a string")
            if "milestone_epochs" in spec and "milestones" in spec:
                raise TwinError(f"recipe: {at} gives both milestone_epochs and milestones; "
                                "keep one")
            if "milestone_epochs" in spec:
                self.milestones = _int_list(spec["milestone_epochs"], f"{at}.milestone_epochs")
            elif "milestones" in spec:
                self.milestones = _int_list(spec["milestones"], f"{at}.milestones")
                self.milestone_epochs = False
            g = spec.get("gamma", 0.1)
            if not isinstance(g, (int, float)) or isinstance(g, bool):
                raise TwinError(f"recipe: {at}.gamma must be a number")
            self.gamma = float(g)
            self.min_lr = _number(spec.get("min_lr", 0.0), f"{at}.min_lr", 0.0)
            if "warmup_epochs" in spec and "warmup_steps" in spec:
                raise TwinError(f"recipe: {at} gives both warmup_epochs and warmup_steps; "
                                "keep one")
            if "warmup_epochs" in spec:
                self.warmup = _int_field(spec["warmup_epochs"], f"{at}.warmup_epochs")
                self.warmup_epochs = True
            elif "warmup_steps" in spec:
                self.warmup = _int_field(spec["warmup_steps"], f"{at}.warmup_steps")
        else:
            raise TwinError(f'recipe: {at} must be "constant", "cosine" or an object with '
                            'a "type"')
        if self.kind not in ("constant", "cosine", "multistep"):
            raise TwinError(f"recipe: {at} type '{self.kind}' is not constant, cosine or "
                            "multistep")
        if self.kind == "multistep":
            if not self.milestones:
                raise TwinError(f"recipe: {at}: multistep needs milestone_epochs (or "
                                "milestones in steps)")
            if len(self.milestones) > MAX_MILESTONES:
                raise TwinError(f"recipe: {at}: at most {MAX_MILESTONES} milestones")
            if self.milestones != sorted(self.milestones) or self.milestones[0] <= 0:
                raise TwinError(f"recipe: {at}: milestones must be positive and increasing")
            if not self.gamma > 0.0:
                raise TwinError(f"recipe: {at}: gamma must be positive")
        elif self.milestones:
            raise TwinError(f"recipe: {at}: milestones only apply to type multistep")
        if self.warmup < 0:
            raise TwinError(f"recipe: {at}: the warm-up must not be negative")

    def resolve(self, lr, steps_per_epoch, total_steps):
        """resolve_schedule (models/recipe_schedule.cpp): epochs become steps; a cosine
        decays over the run's steps after the warm-up."""
        warm = self.warmup * steps_per_epoch if self.warmup_epochs else self.warmup
        miles = [m * steps_per_epoch if self.milestone_epochs else m for m in self.milestones]
        cos_steps = max(total_steps - warm, 1) if self.kind == "cosine" else 0
        return LrFunction(float(lr), self.kind, warm, cos_steps, miles, self.gamma, self.min_lr)


class LrFunction:
    """scheduled_lr (kernels/common/schedule.h) in Python doubles, for 1-based step t."""

    def __init__(self, lr, kind, warmup_steps, cosine_steps, milestones, gamma, min_lr=0.0):
        self.lr = lr
        self.kind = kind
        self.warmup_steps = warmup_steps
        self.cosine_steps = cosine_steps
        self.milestones = list(milestones)
        self.gamma = gamma
        self.min_lr = min_lr

    @property
    def is_constant(self):
        return self.kind == "constant" and self.warmup_steps == 0

    def __call__(self, t):
        lr = self.lr
        if self.warmup_steps > 0 and t <= self.warmup_steps:
            return lr * float(t) / float(self.warmup_steps)
        u = t - self.warmup_steps
        if self.kind == "cosine":
            if self.cosine_steps <= 0:
                return lr
            done = float(min(u - 1, self.cosine_steps))
            # With min_lr 0 this is lr * 0.5 * (...) bit for bit (lr - 0, 0 + x are exact).
            return self.min_lr + (lr - self.min_lr) * 0.5 * (
                1.0 + math.cos(3.141592653589793 * done / float(self.cosine_steps)))
        if self.kind == "multistep":
            r = lr
            for m in self.milestones:
                if u - 1 >= m:
                    r *= self.gamma
            return r
        return lr

    def describe(self):
        """What the result row's lr_schedule says: the plain name for a plain schedule,
        else an object with the resolved step counts."""
        if self.kind != "multistep" and self.warmup_steps == 0 and not (
                self.kind == "cosine" and self.min_lr):
            return self.kind
        d = {"type": self.kind, "warmup_steps": self.warmup_steps}
        if self.kind == "multistep":
            d.update({"milestones": self.milestones, "gamma": self.gamma})
        if self.kind == "cosine":
            d["cosine_steps"] = self.cosine_steps
            if self.min_lr:
                d["min_lr"] = self.min_lr
        return d
