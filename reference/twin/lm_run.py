"""One run of the gpt family (a language model over a token corpus, step-based): corpus,
model, Philox init or a checkpoint, AdamW groups, grad clipping, the schedule ->
twin/lm_train.py -> the result row; and the --dump-batches path. Imported by run.py only
after torch imported."""
from __future__ import annotations

import os

import torch

from .common import TwinError, Unavailable, log, one_line, write_atomic
from .recipe import Schedule, gpt_config
from .text import TEXT_SETS, load_corpus

ATTENTION_CHOICES = ("auto", "math", "sdpa")


def _config(recipe):
    cfg = gpt_config(recipe)
    cfg["lr"] = float(recipe["optimizer"].get("lr", 1e-3))
    return cfg


def _corpus(args, recipe, result):
    name = args.dataset or recipe["dataset"]["name"]
    if name not in TEXT_SETS:
        raise TwinError(f"dataset '{name}' is not a token corpus; the gpt family trains on "
                        f"{', '.join(sorted(TEXT_SETS))}")
    clock = getattr(args, "target_clock", None)
    if clock is not None and getattr(args, "dist", None) is None:
        clock.touch()                          # time to target starts at the data's files
    c = load_corpus(name, args.data_dir)
    log(f"{name} from {c['path']}: {c['n']} tokens, vocab {len(c['vocab'])}, "
        f"{c['n_train']} train / {c['n_val']} val")
    result.update({"dataset": name, "n_train": c["n_train"], "n_test": c["n_val"],
                   "vocab_size": len(c["vocab"])})
    return c


def _attention(args, torch_mod):
    """twin/gpt.py choose_attention (shared with the vit family)."""
    from .gpt import choose_attention
    return choose_attention(args, torch_mod)


def dump_batches(args, info, recipe, device):
    """--dump-batches FILE: the int32 inputs of the first --dump-steps steps' batches,
    (N, B, T) little-endian, written to FILE.tmp.<pid> and renamed."""
    from .lm_train import dump_batch_inputs
    cfg = _config(recipe)
    corpus = _corpus(args, recipe, info)
    n = args.dump_steps
    arr = dump_batch_inputs(args.seed, n, cfg, corpus, device).astype("<i4", copy=False)
    write_atomic(args.dump_batches, arr.tobytes())
    log(f"dumped the inputs of steps 0..{n - 1} to {args.dump_batches}")
    info.update({"dumped_steps": n, "file": os.path.abspath(args.dump_batches),
                 "seed": args.seed, "shape": list(arr.shape), "dtype": "i32",
                 "bytes": arr.nbytes})
    return info


def run_lm(args, result, recipe, device):
    from .checkpoint import load_checkpoint
    from .gpt import build_gpt, init_gpt_philox, param_groups
    from .lm_train import train_and_evaluate_lm
    from .optim import make_optimizer
    from .compiled import check_available
    from .torch_env import autocast_factory, set_deterministic, set_tf32

    cfg = _config(recipe)
    if args.epochs is not None:
        log(f"--epochs {args.epochs} ignored: the gpt family runs recipe 'steps' "
            f"({cfg['steps']}), capped by --max-steps")
    check_available(args.mode, device, torch)
    schedule = Schedule(recipe["optimizer"].get("schedule", "constant"))
    if schedule.warmup_epochs or (schedule.milestones and schedule.milestone_epochs):
        raise TwinError("recipe: the gpt family counts in steps: use warmup_steps and "
                        "milestones, not warmup_epochs / milestone_epochs")
    attention = _attention(args, torch)
    autocast = autocast_factory(device, args.dtype, torch)
    result["tf32"] = set_tf32(device, torch)
    result["deterministic"] = set_deterministic(args.det_on, torch)
    torch.manual_seed(args.seed)
    corpus = _corpus(args, recipe, result)

    model, params = build_gpt(cfg, len(corpus["vocab"]), attention)
    if args.init_checkpoint:
        result["init"] = "checkpoint"
        result["init_checkpoint"] = load_checkpoint(args.init_checkpoint, params, [], recipe)
    else:
        result["init"] = "philox"
        init_gpt_philox(params, args.seed)
    model = model.to(torch.device(device))
    model.train()
    result["num_params"] = sum(p.numel() for p in model.parameters())
    result.update({"context": cfg["context"], "eval_interval": cfg["eval_interval"],
                   "grad_clip": cfg["grad_clip"], "attention_impl": attention})
    ctx = getattr(args, "dist", None)       # a data-parallel rank (twin/dist.py)
    result.update({"ranks": 1 if ctx is None else ctx.world,
                   "zero": None if ctx is None else ctx.zero})
    train_module = model if ctx is None else ctx.wrap_model(model, device)
    wd = float(recipe["optimizer"].get("weight_decay", 0.0))
    groups = param_groups(params, cfg["decay_min_rank"], wd)
    try:
        optimizer, impl, no_fused = make_optimizer(
            recipe, groups, device, None if ctx is None else ctx.construct_optimizer())
    except (TypeError, ValueError) as e:
        if ctx is None or ctx.zero == 0:
            raise
        raise Unavailable(f"ZeroRedundancyOptimizer({recipe['optimizer']['type']}) refused "
                          f"the two parameter groups: {one_line(e)}")
    result["optimizer"] = recipe["optimizer"]["type"].lower()
    result["adam_impl"] = impl
    if no_fused:
        log(f"optimizer: {impl}, not fused: {no_fused}")
    log(f"gpt: {cfg['layers']} layers, {cfg['heads']} heads, width {cfg['width']}, context "
        f"{cfg['context']}, bias {cfg['bias']}: {result['num_params']} parameters"
        + ("" if ctx is None else f"; rank 0 of {ctx.world}, "
           f"{'ZeRO-1 (ZeroRedundancyOptimizer)' if ctx.zero else 'DDP'}, backend {ctx.backend}"))

    train_and_evaluate_lm(args, cfg, result, model, train_module, params, optimizer, autocast,
                          schedule, corpus, device, ctx)
