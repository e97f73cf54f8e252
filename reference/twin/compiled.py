"""The twin's compiled modes, as users write them on torch 2.x: the whole training step
(batch gather, zero_grad, forward, loss, backward, clipping, optimizer step) is one
function under one torch.compile -- mode "compiled" with torch's defaults, "graphs" with
mode="reduce-overhead" (CUDA graphs of what was captured).

Dynamo breaks that function where it cannot trace with default settings (at backward()
and around the fused optimizer, whose kernel torch runs as it is); the numbers of graphs
and breaks are reported beside the compile time, so a reader sees what was compiled. A
scheduled learning rate is a 0-dim tensor in compiled modes: a float lr is a constant
Dynamo guards on, and a new value every step would recompile every step."""
from __future__ import annotations

from .common import Unavailable, one_line
from .torch_env import torch_version_tuple


def check_available(mode, device, torch):
    """Unavailable when the installed torch or the device cannot run the mode."""
    if mode not in ("compiled", "graphs"):
        return
    if torch_version_tuple(torch) < (2, 0) or not hasattr(torch, "compile"):
        raise Unavailable(f"torch.compile needs torch>=2.0, found {torch.__version__}")
    if mode == "graphs" and device != "cuda":
        raise Unavailable("CUDA graphs need a CUDA device")


def use_tensor_lr(optimizer, mode, torch):
    """In compiled modes, every group's lr becomes a 0-dim float32 tensor on its
    parameters' device (set_lr then changes a value, not a guarded constant)."""
    if mode == "eager":
        return
    for g in optimizer.param_groups:
        if not torch.is_tensor(g["lr"]):
            g["lr"] = torch.tensor(float(g["lr"]), dtype=torch.float32,
                                   device=g["params"][0].device)


def set_lr(optimizer, lr):
    for g in optimizer.param_groups:
        if hasattr(g["lr"], "fill_"):
            g["lr"].fill_(lr)
        else:
            g["lr"] = lr


def compile_step(step, mode, result, torch):
    """(step to call, mark_step or None): the step itself in eager mode, else compiled."""
    if mode == "eager":
        return step, None
    options = {} if mode == "compiled" else {"mode": "reduce-overhead"}
    try:
        compiled = torch.compile(step, **options)
    except Exception as e:  # e.g. Dynamo unsupported on this Python
        raise Unavailable(f"torch.compile({', '.join(f'{k}={v!r}' for k, v in options.items())})"
                          f" failed: {one_line(e)}")
    result["compile_impl"] = ("torch.compile(whole step" +
                              ("" if mode == "compiled" else ", mode='reduce-overhead'") + ")")
    if mode == "graphs":
        result["graphs_impl"] = result["compile_impl"]
        comp = getattr(torch, "compiler", None)
        return compiled, getattr(comp, "cudagraph_mark_step_begin", None)
    return compiled, None


def compile_stats(mode, result, torch):
    """What Dynamo made of the step: graphs compiled and graph breaks (the counters of
    torch._dynamo.utils, read after the run)."""
    if mode == "eager":
        return
    try:
        from torch._dynamo.utils import counters
        result["compiled_graphs"] = int(counters["stats"].get("unique_graphs", 0))
        result["graph_breaks"] = int(sum(counters["graph_break"].values()))
    except Exception:  # the counters are internal: absent figures, not a failed run
        pass
