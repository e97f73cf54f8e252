"""One run of the twin: recipe, torch, device, data, model, initial weights, optimizer ->
train (twin/train.py) -> the result row; and the --dump-augmented path. Torch is imported
inside, so a missing torch is a clean error row."""
from __future__ import annotations

import os
import sys
import time

from .common import SCHEMA, TwinError, log, one_line, write_atomic
from .recipe import Schedule, is_lm, is_vit, load_recipe

# Every row (available or not) carries every key, in this order; unknown values are null.
RESULT_KEYS = [
    "schema", "ok", "available", "unavailable_reason",
    "torch_version", "python_version", "cuda_version", "cudnn_version",
    "recipe", "dataset", "n_train", "n_test",
    "device", "device_name", "mode", "dtype", "threads", "tf32", "deterministic",
    "optimizer", "adam_impl", "graphs_impl", "compile_impl", "compiled_graphs", "graph_breaks", "init", "init_checkpoint", "num_params",
    "seed", "epochs", "epochs_run", "batch", "drop_last", "steps_per_epoch", "steps", "warmup",
    "timer", "step_times_ms", "median_step_ms", "wall_ms_per_step", "compile_seconds", "cpu_window",
    "losses", "train_loss_last_epoch", "test_top1", "test_loss", "eval_dtype",
    "lr_schedule", "augment",
    # the gpt family (null for the image models)
    "vocab_size", "context", "n_val_windows", "eval_interval", "grad_clip", "attention_impl",
    "val_losses", "final_val_loss", "tokens_per_s", "eval_seconds", "grad_norms",
    # the gpt family's data parallelism (--ranks, --zero; twin/dist.py)
    "ranks", "zero", "per_rank_step_ms",
    # peak memory, time to target, energy of the timed steps (twin/resources.py)
    "memory", "time_to_target", "energy",
]


def _import_torch():
    try:
        import torch
    except Exception as e:
        raise TwinError(f"torch is not importable: {one_line(e)} (python {sys.executable})")
    try:
        import numpy  # noqa: F401
    except Exception as e:
        raise TwinError(f"numpy is not importable: {one_line(e)} (python {sys.executable})")
    return torch


def _setup(args, result):
    """Recipe, torch, threads and device."""
    recipe = load_recipe(args.recipe)
    result["recipe"] = recipe.get("name", os.path.splitext(os.path.basename(args.recipe))[0])
    torch = _import_torch()
    from .torch_env import select_device

    result["torch_version"] = torch.__version__
    result["cuda_version"] = getattr(torch.version, "cuda", None)
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    result["threads"] = torch.get_num_threads()
    device = select_device(args, result, torch)
    return recipe, torch, device


def _load_data(args, recipe, torch, device, result):
    """The data set, normalised, resident on the device (also kept as numpy)."""
    from . import data as data_mod
    ds_name = args.dataset or recipe["dataset"]["name"]
    clock = getattr(args, "target_clock", None)
    if clock is not None:
        clock.touch()                          # time to target starts at the data's files
    t0 = time.perf_counter()
    d = data_mod.load_dataset(ds_name, args.data_dir, recipe["dataset"].get("normalize"))
    in_shape = [int(s) for s in recipe["input_shape"]]
    feat = 1
    for s in in_shape:
        feat *= s
    sample = list(d["shape"])
    if feat != sample[0] * sample[1] * sample[2]:
        raise TwinError(f"data set {ds_name} has samples of shape {tuple(sample)} but the "
                        f"recipe's input_shape is {in_shape}; pick a model whose input_shape "
                        f"fits {ds_name}, or a data set that fits it")
    n_train, n_test = d["train_x"].shape[0], d["test_x"].shape[0]
    dev = torch.device(device)
    d["train_x_t"] = torch.from_numpy(d["train_x"]).reshape([n_train] + in_shape).to(dev)
    d["train_y_t"] = torch.from_numpy(d["train_y"]).to(dev)
    d["test_x_t"] = torch.from_numpy(d["test_x"]).reshape([n_test] + in_shape).to(dev)
    d["test_y_t"] = torch.from_numpy(d["test_y"]).to(dev)
    log(f"{ds_name} from {d['dir']}: {n_train} train / {n_test} test, resident on "
        f"{device} ({time.perf_counter() - t0:.2f} s)")
    result.update({"dataset": ds_name, "n_train": n_train, "n_test": n_test})
    return d, in_shape


def _augmenter(recipe, d, in_shape, seed, result):
    from .augment import Augmenter, parse_augment
    from .data import pad_fill
    aug = parse_augment(recipe)
    result["augment"] = (None if aug is None else
                         {"random_crop_pad": aug[0], "horizontal_flip": aug[1]})
    if aug is None:
        return None
    if list(in_shape) != list(d["shape"]):
        raise TwinError(f"recipe: augment needs image input_shape {list(d['shape'])}, "
                        f"got {in_shape}")
    return Augmenter(d["train_x_t"], aug[0], aug[1], pad_fill(d["mean"], d["std"]), seed)


def dump_augmented(args):
    """--dump-augmented FILE: the first N augmented training samples of one epoch, raw
    little-endian float32 (N, C, H, W), written to FILE.tmp.<pid> and renamed."""
    info = {"schema": SCHEMA, "ok": True}
    recipe, torch, device = _setup(args, info)
    if is_lm(recipe):
        raise TwinError("--dump-augmented applies to image recipes; the gpt family has "
                        "--dump-batches FILE --dump-steps N")
    d, in_shape = _load_data(args, recipe, torch, device, info)
    aug = _augmenter(recipe, d, in_shape, args.seed, info)
    n_train = d["train_x"].shape[0]
    n = n_train if args.dump_count is None else args.dump_count
    if n > n_train:
        raise TwinError(f"--dump-count {n} exceeds the {n_train} training samples of "
                        f"{info['dataset']}")
    if aug is None:
        log("the recipe has no augment: dumping the normalised samples unchanged")
        x = d["train_x_t"][:n]
    else:
        x = aug.epoch(args.dump_epoch, count=n)[:n]
    arr = x.detach().to("cpu").contiguous().numpy().astype("<f4", copy=False)
    write_atomic(args.dump_augmented, arr.tobytes())
    log(f"dumped {n} samples of epoch {args.dump_epoch} to {args.dump_augmented}")
    info.update({"dumped": n, "file": os.path.abspath(args.dump_augmented),
                 "epoch": args.dump_epoch, "seed": args.seed,
                 "shape": [n] + list(x.shape[1:]), "dtype": "f32", "bytes": arr.nbytes})
    return info


def dump_batches(args):
    """--dump-batches FILE (gpt family): twin/lm_run.py dump_batches."""
    info = {"schema": SCHEMA, "ok": True}
    recipe, _, device = _setup(args, info)
    if not is_lm(recipe):
        raise TwinError("--dump-batches applies to the gpt family; image recipes have "
                        "--dump-augmented FILE")
    from .lm_run import dump_batches as dump_lm_batches
    return dump_lm_batches(args, info, recipe, device)


def run(args, result):
    """One run; in a data-parallel rank (twin/dist.py) args.dist is its DistContext."""
    from .dist import wants_distributed
    recipe, torch, device = _setup(args, result)
    distributed = wants_distributed(args)
    if distributed and not is_lm(recipe):
        raise TwinError("--ranks and --zero apply to the gpt family (data-parallel "
                        f"training of a language model); recipe '{result['recipe']}' is not "
                        "one")
    if is_lm(recipe):
        if distributed and getattr(args, "dist", None) is None:
            from .dist import spawn_ranks      # the parent: start the ranks
            return spawn_ranks(args, result, recipe, device, torch)
        from .lm_run import run_lm
        return run_lm(args, result, recipe, device)
    from .checkpoint import load_checkpoint
    from .init import init_params_philox
    from .layers import build_model
    from .blocks import RunState
    from .optim import make_loss, make_optimizer, optimizer_params
    from .compiled import check_available
    from .torch_env import autocast_factory, set_deterministic, set_tf32
    from .train import train_and_evaluate

    check_available(args.mode, device, torch)
    autocast = autocast_factory(device, args.dtype, torch)
    result["tf32"] = set_tf32(device, torch)
    result["deterministic"] = set_deterministic(args.det_on, torch)
    torch.manual_seed(args.seed)
    d, in_shape = _load_data(args, recipe, torch, device, result)

    num_classes = int(recipe.get("num_classes", 10))
    if int(d["train_y"].max()) >= num_classes:
        raise TwinError(f"labels of {result['dataset']} exceed num_classes={num_classes}")

    # ---- model + initial weights
    state = RunState(args.seed)
    vit = is_vit(recipe)
    if vit:
        from .gpt import choose_attention
        from .vit import build_vit
        result["attention_impl"] = choose_attention(args, torch)
        model, params, buffers, out_shape = build_vit(recipe, result["attention_impl"])
    else:
        model, params, buffers, out_shape = build_model(recipe, state)
    if out_shape != [num_classes]:
        raise TwinError(f"recipe: the last layer outputs {out_shape}, "
                        f"num_classes is {num_classes}")
    if args.init_checkpoint:
        result["init"] = "checkpoint"
        result["init_checkpoint"] = load_checkpoint(args.init_checkpoint, params, buffers,
                                                    recipe)
    else:
        result["init"] = "philox"
        if vit:
            from .vit import init_vit_philox
            init_vit_philox(params, args.seed)
        else:
            init_params_philox(params, buffers, recipe.get("init", "kaiming_uniform"),
                               args.seed)
    dev = torch.device(device)
    model = model.to(dev)
    model.train()
    named = dict(model.named_parameters())       # the same tensors, after .to(dev)
    params = [(n, named[n], rule) for n, _, rule in params]
    result["num_params"] = sum(p.numel() for p in model.parameters())

    if vit:
        m = recipe["model"]
        log(f"vit: patch {m['patch']}, width {m['width']}, {m['heads']} heads, mlp_ratio "
            f"{m['mlp_ratio']}, {m['layers']} layers, bias {m.get('bias', False)}, attention "
            f"{result['attention_impl']}: {result['num_params']} parameters")
    # params is the registration order (for the conv families model.parameters()' order).
    optimizer, impl, no_fused = make_optimizer(recipe, optimizer_params(recipe, params),
                                               device)
    result["optimizer"] = recipe["optimizer"]["type"].lower()
    result["adam_impl"] = impl
    if no_fused:
        log(f"optimizer: {impl}, not fused: {no_fused}")
    loss_fn = make_loss(recipe, num_classes)
    schedule = Schedule(recipe["optimizer"].get("schedule", "constant"))
    augmenter = _augmenter(recipe, d, in_shape, args.seed, result)

    train_and_evaluate(args, recipe, result, model, optimizer, loss_fn, autocast, schedule,
                       augmenter, state, d, device)
