"""The vit family's model: a Vision Transformer classifier (models/recipes/vit*.json),
built from twin/gpt.py's pre-LN Block with non-causal attention and an MLP of
mlp_ratio * width. Names and registration order (= Philox init stream = checkpoint names),
N = (H/p)(W/p) patches, D = Cin p p, blocks i = 0 .. layers-1, [..] only when model.bias:

  patch_embed.weight (C, D), patch_embed.bias (C)          (always: not model.bias's)
  cls_token (C), pos_embed (N + 1, C),
  blocks.{i}.ln_1.weight [.bias], blocks.{i}.attn.c_attn.weight (3C, C) [.bias],
  blocks.{i}.attn.c_proj.weight (C, C) [.bias], blocks.{i}.ln_2.weight [.bias],
  blocks.{i}.mlp.c_fc.weight (rC, C) [.bias], blocks.{i}.mlp.c_proj.weight (C, rC) [.bias],
  norm.weight [norm.bias], head.weight (K, C), head.bias (K)   (head bias always)

Forward: x (B, Cin, H, W) -> F.conv2d(x, patch_embed.weight viewed (C, Cin, p, p),
patch_embed.bias, stride p) -> (B, C, H/p, W/p) -> flatten(2).transpose(1, 2) -> (B, N, C)
(patch n row-major over the grid; a patch vector's order (c, ky, kx) is the weight view's,
so this is the Linear over flattened patches); tokens = cat(cls_token, patches) + pos_embed;
the L blocks (gpt.py's Block: LayerNorm eps 1e-5, fused c_attn, nanoGPT's head split,
scale 1/sqrt(hd), softmax in fp32, no mask / SDPA is_causal=False; MLP c_fc -> GELU tanh
-> c_proj); norm over every token; token 0 -> head -> logits (B, K).

Init ("normal", init_std s): patch_embed.weight, pos_embed and every Linear weight
N(0, s) from philox.normal_init (stream = registration index; the c_proj weights are NOT
scaled by 1/sqrt(2L) as in the gpt family); cls_token, all biases 0; LayerNorm weights 1.

The module registers cls_token and pos_embed on itself, so torch's named_parameters lists
them before patch_embed's; the order above is the params list build_vit returns, which the
run uses for the init streams, the checkpoint and the optimizer.
"""
from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

from .common import TwinError
from .gpt import Block, LayerNorm, init_gpt_philox
from .recipe import vit_config


class ViT(nn.Module):
    def __init__(self, cfg, attention):
        super().__init__()
        c, p = cfg["width"], cfg["patch"]
        self.width, self.patch, self.channels = c, p, cfg["channels"]
        block_cfg = {"width": c, "heads": cfg["heads"], "bias": cfg["bias"],
                     "causal": False, "mlp_hidden": cfg["mlp_ratio"] * c}
        self.patch_embed = nn.Linear(cfg["patch_dim"], c, bias=True)
        self.cls_token = nn.Parameter(torch.zeros(c))
        self.pos_embed = nn.Parameter(torch.zeros(cfg["patches"] + 1, c))
        self.blocks = nn.ModuleList([Block(block_cfg, attention)
                                     for _ in range(cfg["layers"])])
        self.norm = LayerNorm(c, cfg["bias"])
        self.head = nn.Linear(c, cfg["num_classes"], bias=True)

    def forward(self, x):
        b = x.shape[0]
        c, p = self.width, self.patch
        w = self.patch_embed.weight.view(c, self.channels, p, p)
        x = F.conv2d(x, w, self.patch_embed.bias, stride=p)      # (B, C, H/p, W/p)
        x = x.flatten(2).transpose(1, 2)                          # (B, N, C)
        cls = self.cls_token.view(1, 1, c).expand(b, 1, c)
        x = torch.cat([cls, x.to(cls.dtype)], dim=1) + self.pos_embed
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x)[:, 0])


def param_specs(cfg):
    """[(name, shape, rule)] in registration order; rule = {"kind": "normal", "std"} |
    {"kind": "ones"} | {"kind": "zeros"}."""
    c, s, bias = cfg["width"], cfg["init_std"], cfg["bias"]
    hidden = cfg["mlp_ratio"] * c
    normal = {"kind": "normal", "std": s}
    out = [("patch_embed.weight", (c, cfg["patch_dim"]), normal),
           ("patch_embed.bias", (c,), {"kind": "zeros"}),
           ("cls_token", (c,), {"kind": "zeros"}),
           ("pos_embed", (cfg["patches"] + 1, c), normal)]

    def ln(name):
        out.append((f"{name}.weight", (c,), {"kind": "ones"}))
        if bias:
            out.append((f"{name}.bias", (c,), {"kind": "zeros"}))

    def linear(name, n_out, n_in):
        out.append((f"{name}.weight", (n_out, n_in), normal))
        if bias:
            out.append((f"{name}.bias", (n_out,), {"kind": "zeros"}))

    for i in range(cfg["layers"]):
        ln(f"blocks.{i}.ln_1")
        linear(f"blocks.{i}.attn.c_attn", 3 * c, c)
        linear(f"blocks.{i}.attn.c_proj", c, c)
        ln(f"blocks.{i}.ln_2")
        linear(f"blocks.{i}.mlp.c_fc", hidden, c)
        linear(f"blocks.{i}.mlp.c_proj", c, hidden)
    ln("norm")
    out.append(("head.weight", (cfg["num_classes"], c), normal))
    out.append(("head.bias", (cfg["num_classes"],), {"kind": "zeros"}))
    return out


def build_vit(recipe, attention):
    """-> (model, params [(name, Parameter, rule)] in registration order, buffers [] (none),
    per-sample output shape [K]), like layers.build_model. The module's parameters must be
    exactly param_specs' (names and shapes; torch lists them in another order)."""
    cfg = vit_config(recipe)
    model = ViT(cfg, attention)
    named = dict(model.named_parameters())
    specs = param_specs(cfg)
    got = sorted((n, tuple(p.shape)) for n, p in named.items())
    want = sorted((n, tuple(shape)) for n, shape, _ in specs)
    if got != want:
        raise TwinError(f"internal: the ViT module registers {got[:6]}..., the spec says "
                        f"{want[:6]}...")
    params = [(n, named[n], rule) for n, _, rule in specs]
    return model, params, [], [cfg["num_classes"]]


def init_vit_philox(params, seed):
    """Philox normal init (stream = index in params), zeros and ones: gpt.py's."""
    init_gpt_philox(params, seed)
