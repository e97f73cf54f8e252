"""The gpt family's model (nanoGPT's GPT, dropout 0, tied head), its Philox init and its
AdamW parameter groups. Names and registration order (= Philox init stream = checkpoint
names), for blocks i = 0 .. layers-1, [..] only when model.bias:

  wte.weight (V, C), wpe.weight (T, C),
  h.{i}.ln_1.weight [h.{i}.ln_1.bias], h.{i}.attn.c_attn.weight (3C, C) [.bias],
  h.{i}.attn.c_proj.weight (C, C) [.bias], h.{i}.ln_2.weight [.bias],
  h.{i}.mlp.c_fc.weight (4C, C) [.bias], h.{i}.mlp.c_proj.weight (C, 4C) [.bias],
  ln_f.weight [ln_f.bias]

Forward: x = wte[idx] + wpe[0..T-1]; per block x = x + attn(ln_1(x)), x = x + mlp(ln_2(x));
logits = ln_f(x) @ wte^T (no lm_head parameter). LayerNorm eps 1e-5. Attention: fused
c_attn, q, k, v = split(C, dim=-1), each viewed (B, T, nh, hd) and transposed to
(B, nh, T, hd); "math": att = (q @ k^T) * float32(1/sqrt(hd)), future positions -inf,
softmax in fp32, y = att @ v; "sdpa": F.scaled_dot_product_attention(is_causal=True)
(torch >= 2.0). y -> (B, T, C) -> c_proj. MLP: c_proj(gelu_tanh(c_fc(x))) -- GELU's tanh
approximation, as the C++ kernels (nanoGPT uses the exact one).

Init ("normal", init_std s): embeddings and Linear weights N(0, s) from
philox.normal_init (stream = registration index), the two c_proj weights
N(0, s / sqrt(2 * layers)) (nanoGPT); LayerNorm weights 1, all biases 0.

The vit family (twin/vit.py) reuses Block with cfg["causal"] False (no mask, SDPA
is_causal=False) and cfg["mlp_hidden"] = mlp_ratio * width; the gpt family sets neither.
"""
from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

import philox

from .common import TwinError, Unavailable

LN_EPS = 1e-5


def has_sdpa():
    return hasattr(F, "scaled_dot_product_attention")


def choose_attention(args, torch_mod):
    """--attention: auto = SDPA in every mode when torch has it (>= 2.0), as users of
    torch 2.x write attention; the explicit math without it, or when asked for."""
    want = args.attention
    if want == "auto":
        want = "sdpa" if has_sdpa() else "math"
    elif want == "sdpa" and not has_sdpa():
        raise Unavailable("--attention sdpa needs F.scaled_dot_product_attention (torch>=2.0), "
                          f"found {torch_mod.__version__}")
    return want


class LayerNorm(nn.Module):
    """nn.LayerNorm with an optional bias (bias=False needs torch >= 2.1 there)."""

    def __init__(self, c, bias):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(c))
        self.bias = nn.Parameter(torch.zeros(c)) if bias else None

    def forward(self, x):
        return F.layer_norm(x, self.weight.shape, self.weight, self.bias, LN_EPS)


class CausalSelfAttention(nn.Module):
    """Multi-head self-attention; causal unless cfg["causal"] is False (the vit family's
    encoder, twin/vit.py), which attends to every position and needs no cfg["context"]."""

    def __init__(self, cfg, attention):
        super().__init__()
        c = cfg["width"]
        self.n_head = cfg["heads"]
        self.c_attn = nn.Linear(c, 3 * c, bias=cfg["bias"])
        self.c_proj = nn.Linear(c, c, bias=cfg["bias"])
        self.scale = 1.0 / math.sqrt(c // self.n_head)   # a Python float: fp32 multiply
        self.sdpa = attention == "sdpa"
        self.causal = cfg.get("causal", True)
        if self.causal and not self.sdpa:
            t = cfg["context"]
            self.register_buffer("future", torch.ones(t, t, dtype=torch.bool).triu(1),
                                 persistent=False)

    def forward(self, x):
        b, t, c = x.shape
        hd = c // self.n_head
        q, k, v = self.c_attn(x).split(c, dim=2)
        q = q.view(b, t, self.n_head, hd).transpose(1, 2)
        k = k.view(b, t, self.n_head, hd).transpose(1, 2)
        v = v.view(b, t, self.n_head, hd).transpose(1, 2)
        if self.sdpa:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=self.causal)
        else:
            att = (q @ k.transpose(-2, -1)) * self.scale
            att = att.float()
            if self.causal:
                att = att.masked_fill(self.future[:t, :t], float("-inf"))
            att = F.softmax(att, dim=-1).to(v.dtype)
            y = att @ v
        y = y.transpose(1, 2).contiguous().view(b, t, c)
        return self.c_proj(y)


class MLP(nn.Module):
    """c_fc (C -> hidden) -> GELU (tanh) -> c_proj (hidden -> C); hidden = cfg["mlp_hidden"],
    4C when absent (the gpt family)."""

    def __init__(self, cfg):
        super().__init__()
        c = cfg["width"]
        hidden = cfg.get("mlp_hidden", 4 * c)
        self.c_fc = nn.Linear(c, hidden, bias=cfg["bias"])
        self.c_proj = nn.Linear(hidden, c, bias=cfg["bias"])

    def forward(self, x):
        return self.c_proj(F.gelu(self.c_fc(x), approximate="tanh"))


class Block(nn.Module):
    def __init__(self, cfg, attention):
        super().__init__()
        # Assignment order = registration order (ln_1, attn, ln_2, mlp).
        self.ln_1 = LayerNorm(cfg["width"], cfg["bias"])
        self.attn = CausalSelfAttention(cfg, attention)
        self.ln_2 = LayerNorm(cfg["width"], cfg["bias"])
        self.mlp = MLP(cfg)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, cfg, vocab_size, attention):
        super().__init__()
        self.wte = nn.Embedding(vocab_size, cfg["width"])
        self.wpe = nn.Embedding(cfg["context"], cfg["width"])
        self.h = nn.ModuleList([Block(cfg, attention) for _ in range(cfg["layers"])])
        self.ln_f = LayerNorm(cfg["width"], cfg["bias"])
        self.register_buffer("pos", torch.arange(cfg["context"], dtype=torch.int64),
                             persistent=False)

    def forward(self, idx):
        t = idx.shape[1]
        x = self.wte(idx) + self.wpe(self.pos[:t])
        for block in self.h:
            x = block(x)
        return F.linear(self.ln_f(x), self.wte.weight)   # tied head


def param_specs(cfg, vocab_size):
    """[(name, shape, rule)] in registration order; rule = {"kind": "normal", "std"} |
    {"kind": "ones"} | {"kind": "zeros"}."""
    c, t, s, bias = cfg["width"], cfg["context"], cfg["init_std"], cfg["bias"]
    s_proj = s / math.sqrt(2 * cfg["layers"])
    out = [("wte.weight", (vocab_size, c), {"kind": "normal", "std": s}),
           ("wpe.weight", (t, c), {"kind": "normal", "std": s})]

    def ln(name):
        out.append((f"{name}.weight", (c,), {"kind": "ones"}))
        if bias:
            out.append((f"{name}.bias", (c,), {"kind": "zeros"}))

    def linear(name, n_out, n_in, std):
        out.append((f"{name}.weight", (n_out, n_in), {"kind": "normal", "std": std}))
        if bias:
            out.append((f"{name}.bias", (n_out,), {"kind": "zeros"}))

    for i in range(cfg["layers"]):
        ln(f"h.{i}.ln_1")
        linear(f"h.{i}.attn.c_attn", 3 * c, c, s)
        linear(f"h.{i}.attn.c_proj", c, c, s_proj)
        ln(f"h.{i}.ln_2")
        linear(f"h.{i}.mlp.c_fc", 4 * c, c, s)
        linear(f"h.{i}.mlp.c_proj", c, 4 * c, s_proj)
    ln("ln_f")
    return out


def build_gpt(cfg, vocab_size, attention):
    """-> (model, params [(name, Parameter, rule)]); the module's named_parameters must be
    exactly param_specs (names, order, shapes)."""
    model = GPT(cfg, vocab_size, attention)
    specs = param_specs(cfg, vocab_size)
    named = list(model.named_parameters())
    got = [(n, tuple(p.shape)) for n, p in named]
    want = [(n, tuple(shape)) for n, shape, _ in specs]
    if got != want:
        raise TwinError(f"internal: the GPT module registers {got[:6]}..., the spec says "
                        f"{want[:6]}...")
    return model, [(n, p, rule) for (n, p), (_, _, rule) in zip(named, specs)]


def init_gpt_philox(params, seed):
    with torch.no_grad():
        for p_index, (_, p, rule) in enumerate(params):
            if rule["kind"] == "zeros":
                p.zero_()
            elif rule["kind"] == "ones":
                p.fill_(1.0)
            else:
                p.copy_(torch.from_numpy(
                    philox.normal_init(seed, p_index, tuple(p.shape), rule["std"])))


def param_groups(params, decay_min_rank, weight_decay):
    """AdamW groups: weight decay on parameters of rank >= decay_min_rank (embeddings and
    Linear weights for 2), none on the others (LayerNorm weights and biases, Linear biases).
    Decay group first; each in registration order; empty groups left out."""
    decay = [p for _, p, _ in params if p.dim() >= decay_min_rank]
    rest = [p for _, p, _ in params if p.dim() < decay_min_rank]
    groups = []
    if decay:
        groups.append({"params": decay, "weight_decay": weight_decay})
    if rest:
        groups.append({"params": rest, "weight_decay": 0.0})
    return groups
