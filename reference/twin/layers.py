"""Recipe "layers" -> a torch model whose parameter names and registration order are the
C++ side's (models/layer_list.h): children named by kind with a 1-based counter per kind,
counted over the top-level list ("conv1", "bn1", "fc1", "layer1" ...), so parameters are
"conv1.weight", "bn1.bias", "layer2.0.conv1.weight", "fc1.weight". Registration order =
list order; inside a layer weight before bias; inside a block conv1, bn1, conv2, bn2. The
parameter index in that order is its Philox init stream and its place in the checkpoint.
"""
from __future__ import annotations

from collections import OrderedDict

import torch.nn as nn

from .blocks import BasicBlock, PhiloxDropout, activation
from .common import TwinError, nonneg_int, positive_int


class Builder:
    """State of one walk over the list: the per-kind counters, the modules so far and the
    per-sample shape flowing out of the last one."""

    def __init__(self, input_shape, run_state):
        self.shape = [int(s) for s in input_shape]
        self.state = run_state
        self.counts = {}
        self.modules = []        # (name, module)
        self.where = ""

    def next_name(self, prefix):
        self.counts[prefix] = self.counts.get(prefix, 0) + 1
        return f"{prefix}{self.counts[prefix]}"

    def add(self, name, module):
        self.modules.append((name, module))

    def add_act(self, name, act):
        m = activation(act, self.where)
        if m is not None:
            self.add(f"{name}_{act}", m)

    def field(self, spec, key, default=None, minimum=1):
        if key not in spec:
            if default is None:
                raise TwinError(f"recipe: {self.where} needs '{key}'")
            return default
        what = f"{self.where}: '{key}'"
        return positive_int(spec[key], what) if minimum >= 1 else nonneg_int(spec[key], what)

    def image_shape(self):
        if len(self.shape) != 3:
            raise TwinError(f"recipe: {self.where} needs an image input (C, H, W), got "
                            f"{self.shape}")
        return self.shape


def _out_size(n, k, s, p, where):
    o = (n + 2 * p - k) // s + 1
    if n + 2 * p < k or o < 1:
        raise TwinError(f"recipe: {where}: kernel {k} does not fit an input of {n} "
                        f"(pad {p})")
    return o


def build_linear(spec, b):
    out = b.field(spec, "out")
    if len(b.shape) != 1:
        raise TwinError(f"recipe: {b.where} needs a flat input, got {b.shape} "
                        "(put a flatten before it)")
    name = b.next_name("fc")
    b.add(name, nn.Linear(b.shape[0], out, bias=bool(spec.get("bias", True))))
    b.add_act(name, spec.get("act"))
    b.shape = [out]


def build_conv2d(spec, b):
    c, h, w = b.image_shape()
    out = b.field(spec, "out")
    k = b.field(spec, "kernel")
    s = b.field(spec, "stride", 1)
    p = b.field(spec, "pad", 0, minimum=0)
    ho, wo = _out_size(h, k, s, p, b.where), _out_size(w, k, s, p, b.where)
    name = b.next_name("conv")
    b.add(name, nn.Conv2d(c, out, k, stride=s, padding=p, bias=bool(spec.get("bias", True))))
    b.add_act(name, spec.get("act"))
    b.shape = [out, ho, wo]


def build_batchnorm2d(spec, b):
    c, _, _ = b.image_shape()
    # The recipe's eps and momentum, with the C++ builder's defaults and rules
    # (models/convnet.cpp).
    try:
        eps, momentum = float(spec.get("eps", 1e-5)), float(spec.get("momentum", 0.1))
    except (TypeError, ValueError):
        eps = momentum = float("nan")
    if not eps > 0.0 or not 0.0 <= momentum <= 1.0:
        raise TwinError(f"recipe: {b.where}: 'eps' must be positive and 'momentum' in [0, 1]")
    b.add(b.next_name("bn"), nn.BatchNorm2d(c, eps=eps, momentum=momentum))


def _pool(spec, b, kind):
    c, h, w = b.image_shape()
    k = b.field(spec, "kernel")
    s = b.field(spec, "stride", k)
    p = b.field(spec, "pad", 0, minimum=0)
    if 2 * p > k:
        raise TwinError(f"recipe: {b.where}: pad {p} is more than half the kernel {k}")
    ho, wo = _out_size(h, k, s, p, b.where), _out_size(w, k, s, p, b.where)
    if kind == "maxpool2d":
        m = nn.MaxPool2d(k, stride=s, padding=p)
        name = b.next_name("maxpool")
    else:
        m = nn.AvgPool2d(k, stride=s, padding=p, count_include_pad=True)
        name = b.next_name("avgpool")
    b.add(name, m)
    b.shape = [c, ho, wo]


def build_global_avgpool(spec, b):
    c, _, _ = b.image_shape()
    b.add(b.next_name("gap"), nn.AdaptiveAvgPool2d(1))
    b.shape = [c, 1, 1]


def build_flatten(spec, b):
    n = 1
    for s in b.shape:
        n *= s
    b.add(b.next_name("flatten"), nn.Flatten())
    b.shape = [n]


def build_act(spec, b):
    kind = spec["type"]
    b.add(b.next_name(kind), activation(kind, b.where))


def build_dropout(spec, b):
    p = spec.get("p", 0.5)
    if not isinstance(p, (int, float)) or isinstance(p, bool) or not 0.0 <= p < 1.0:
        raise TwinError(f"recipe: {b.where}: 'p' must be a number in [0, 1)")
    layer = b.counts.get("dropout", 0)          # 0-based among the dropout layers
    b.add(b.next_name("dropout"), PhiloxDropout(p, layer, b.state))


def build_resnet_stage(spec, b):
    cin, h, w = b.image_shape()
    blocks = b.field(spec, "blocks")
    out = b.field(spec, "out")
    stride = b.field(spec, "stride", 1)
    if out < cin or (out - cin) % 2:
        raise TwinError(f"recipe: {b.where}: option-A shortcuts pad channels on both sides, "
                        f"so 'out' ({out}) minus the input channels ({cin}) must be even "
                        "and >= 0")
    seq = nn.Sequential()
    c = cin
    for i in range(blocks):
        s = stride if i == 0 else 1
        seq.add_module(str(i), BasicBlock(c, out, s))
        c = out
        h, w = (h + s - 1) // s, (w + s - 1) // s
    b.add(b.next_name("layer"), seq)
    b.shape = [out, h, w]


# One builder per layer type.
LAYER_BUILDERS = {
    "linear": build_linear,
    "conv2d": build_conv2d,
    "batchnorm2d": build_batchnorm2d,
    "maxpool2d": lambda spec, b: _pool(spec, b, "maxpool2d"),
    "avgpool2d": lambda spec, b: _pool(spec, b, "avgpool2d"),
    "global_avgpool": build_global_avgpool,
    "flatten": build_flatten,
    "relu": build_act,
    "gelu": build_act,
    "dropout": build_dropout,
    "resnet_stage": build_resnet_stage,
}


def _rules(model):
    """Init rule of every parameter, by name: weights from the recipe's init with their
    fans, biases and BatchNorm shifts zero, BatchNorm scales one."""
    rules = {}
    for mname, m in model.named_modules():
        pre = f"{mname}." if mname else ""
        if isinstance(m, nn.Conv2d):
            kk = m.kernel_size[0] * m.kernel_size[1]
            rules[pre + "weight"] = {"kind": "weight", "fan_in": m.in_channels * kk,
                                     "fan_out": m.out_channels * kk}
            rules[pre + "bias"] = {"kind": "zeros"}
        elif isinstance(m, nn.Linear):
            rules[pre + "weight"] = {"kind": "weight", "fan_in": m.in_features,
                                     "fan_out": m.out_features}
            rules[pre + "bias"] = {"kind": "zeros"}
        elif isinstance(m, nn.BatchNorm2d):
            rules[pre + "weight"] = {"kind": "ones"}
            rules[pre + "bias"] = {"kind": "zeros"}
    return rules


def build_model(recipe, run_state):
    """-> (model, params [(name, Parameter, rule)] in registration order, buffers
    [(name, tensor)] (BatchNorm running statistics), per-sample output shape)."""
    b = Builder(recipe["input_shape"], run_state)
    for i, spec in enumerate(recipe["layers"]):
        if not isinstance(spec, dict) or not isinstance(spec.get("type"), str):
            raise TwinError(f"recipe: layers[{i}] must be an object with a 'type'")
        b.where = f"layers[{i}] ({spec['type']})"
        builder = LAYER_BUILDERS.get(spec["type"])
        if builder is None:
            raise TwinError(f"recipe: layers[{i}]: the twin has no builder for layer type "
                            f"'{spec['type']}' (known: {', '.join(sorted(LAYER_BUILDERS))})")
        builder(spec, b)
    model = nn.Sequential(OrderedDict(b.modules))
    rules = _rules(model)
    params = []
    for name, p in model.named_parameters():
        if name not in rules:
            raise TwinError(f"internal: no init rule for parameter '{name}'")
        params.append((name, p, rules[name]))
    buffers = [(n, t) for n, t in model.named_buffers()
               if n.endswith(".running_mean") or n.endswith(".running_var")]
    return model, params, buffers, b.shape
