"""Command line and exit codes: 0 for a result row, an `available: false` row or a dump;
1 for an error row (usage errors included). Exactly one JSON object goes to stdout."""
from __future__ import annotations

import argparse
import os
import platform
import sys
import traceback

from .common import (DATASETS, SCHEMA, TwinError, Unavailable, emit, error_row, log,
                     one_line, redirect_stdout_to_stderr)


def parse_args(argv):
    ap = argparse.ArgumentParser(
        prog="torch_nn_reference.py",
        description="PyTorch twin of noeira-bench: trains a recipe, prints one JSON object.")
    ap.add_argument("--recipe", default=None, help="models/recipes/<model>.json (required, "
                                                  "but with --probe)")
    ap.add_argument("--probe", action="store_true",
                    help="no training: time the baseline probe (fp32 and bf16 GEMM, streaming "
                         "bandwidth) at one thread and at --threads on --device, and name the "
                         "math libraries torch runs (twin/probe.py); one JSON object {ok, probe}")
    ap.add_argument("--data-dir", default=None,
                    help="directory holding mnist/, fashion-mnist/, cifar10/, "
                         "tinyshakespeare/ (searched first; "
                         "then $NOEIRA_DATA and the cache); fashion-mnist also falls back to "
                         "/usr/share/datasets/fashion-mnist")
    ap.add_argument("--dataset", default=None, choices=DATASETS,
                    help="override the recipe's dataset.name")
    ap.add_argument("--device", default=None, choices=["cpu", "cuda"],
                    help="default: cuda if available, else cpu")
    ap.add_argument("--mode", default="eager", choices=["eager", "compiled", "graphs"])
    ap.add_argument("--dtype", default="fp32", choices=["fp32", "bf16"])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--epochs", type=int, default=None, help="override the recipe's epochs")
    ap.add_argument("--max-steps", type=int, default=0,
                    help="stop after this many optimizer steps in total (0 = no cap)")
    ap.add_argument("--warmup", type=int, default=10,
                    help="initial steps excluded from step_times_ms")
    ap.add_argument("--threads", type=int, default=None, help="torch.set_num_threads(T)")
    ap.add_argument("--init-checkpoint", default=None,
                    help="parity mode: start from the 'param' and 'buffer' tensors of this "
                         "noeira checkpoint")
    ap.add_argument("--eval-batch", type=int, default=1000)
    ap.add_argument("--deterministic", default="auto", choices=["auto", "on", "off"],
                    help="torch.use_deterministic_algorithms: auto = on in eager mode, "
                         "off in compiled/graphs")
    ap.add_argument("--dump-augmented", default=None, metavar="FILE",
                    help="write the first --dump-count augmented (normalised) training "
                         "samples of epoch --dump-epoch to FILE as raw little-endian float32 "
                         "(N, C, H, W) and exit without training")
    ap.add_argument("--dump-epoch", type=int, default=0, help="epoch of --dump-augmented")
    ap.add_argument("--dump-count", type=int, default=None,
                    help="samples written by --dump-augmented (default: all)")
    ap.add_argument("--dump-batches", default=None, metavar="FILE",
                    help="gpt family: write the int32 inputs of the first --dump-steps "
                         "steps' batches to FILE as raw little-endian (N, B, T) and exit "
                         "without training")
    ap.add_argument("--dump-steps", type=int, default=None,
                    help="steps written by --dump-batches (default 1)")
    ap.add_argument("--attention", default="auto", choices=["auto", "math", "sdpa"],
                    help="gpt and vit families: attention implementation; auto = "
                         "F.scaled_dot_product_attention (torch>=2.0) in every mode, as "
                         "users write it; math = the explicit softmax(q k^T) v")

    ap.add_argument("--ranks", type=int, default=1,
                    help="gpt family: data-parallel ranks (processes started with "
                         "torch.multiprocessing.spawn; rank r trains rows r*B..r*B+B-1 of "
                         "each step's N*B windows); default 1 = one process")
    ap.add_argument("--zero", type=int, default=None, choices=[0, 1],
                    help="gpt family, data parallel: 0 = DDP, 1 = DDP + "
                         "ZeroRedundancyOptimizer (ZeRO-1); default 0 with --ranks > 1; "
                         "given with --ranks 1, one rank still runs the distributed path")
    ap.add_argument("--profile", type=int, default=0, metavar="N",
                    help="torch.profiler over N steps after the warm-up: result['profile'] "
                         "holds each category's ms per step, the top ops and the names no "
                         "category knows (twin/profile.py)")
    ap.add_argument("--profile-trace", default=None, metavar="FILE",
                    help="with --profile: torch.profiler's Chrome trace of those steps")
    ap.add_argument("--target-metric", default=None, choices=["test_top1", "val_loss"],
                    help="time to target: the score (test top-1 %%, or the gpt family's "
                         "validation loss) whose --target-score ends the clock that starts at "
                         "the first touch of the data (twin/resources.py)")
    ap.add_argument("--target-score", type=float, default=None,
                    help="time to target: the score to reach (with --target-metric)")

    def _error(message):
        raise TwinError(f"usage: {message} (see --help)")
    ap.error = _error
    a = ap.parse_args(argv)
    if a.recipe is None and not a.probe:
        ap.error("--recipe is required (but with --probe)")
    if a.seed < 0 or a.seed > 0xFFFFFFFFFFFFFFFF:
        ap.error("--seed must be in [0, 2^64)")
    if a.epochs is not None and a.epochs < 1:
        ap.error("--epochs must be >= 1")
    if a.max_steps < 0:
        ap.error("--max-steps must be >= 0")
    if a.warmup < 0:
        ap.error("--warmup must be >= 0")
    if a.threads is not None and a.threads < 1:
        ap.error("--threads must be >= 1")
    if a.eval_batch < 1:
        ap.error("--eval-batch must be >= 1")
    if a.dump_epoch < 0 or a.dump_epoch > 0xFFFFFFFF:
        ap.error("--dump-epoch must be in [0, 2^32)")
    if a.dump_count is not None and a.dump_count < 1:
        ap.error("--dump-count must be >= 1")
    if a.dump_augmented is None and (a.dump_epoch != 0 or a.dump_count is not None):
        ap.error("--dump-epoch and --dump-count need --dump-augmented FILE")
    if a.dump_batches is None and a.dump_steps is not None:
        ap.error("--dump-steps needs --dump-batches FILE")
    if a.dump_batches is not None and a.dump_augmented is not None:
        ap.error("--dump-batches and --dump-augmented exclude each other")
    if a.ranks < 1 or a.ranks > 1024:
        ap.error("--ranks must be in [1, 1024]")
    if (a.ranks > 1 or a.zero is not None) and (a.dump_batches is not None
                                                 or a.dump_augmented is not None):
        ap.error("--ranks and --zero are for training; --dump-batches and --dump-augmented "
                 "run in one process")
    if (a.target_metric is None) != (a.target_score is None):
        ap.error("--target-metric and --target-score go together")
    if a.target_score is not None and a.target_score != a.target_score:
        ap.error("--target-score must be a number")
    if a.dump_steps is None:
        a.dump_steps = 1
    if a.dump_steps < 1 or a.dump_steps > 0xFFFFFFFF:
        ap.error("--dump-steps must be in [1, 2^32)")
    return a


def _probe(args) -> int:
    """--probe: {schema, ok, torch_version, device, probe} or an error row."""
    try:
        import torch
        from .probe import run_probe
        from .torch_env import set_tf32
        device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
        if device == "cuda" and not torch.cuda.is_available():
            raise TwinError(f"--device cuda but torch {torch.__version__} sees no CUDA device")
        set_tf32(device, torch)            # as the training runs set it
        threads = args.threads or torch.get_num_threads()
        emit({"schema": SCHEMA, "ok": True, "torch_version": torch.__version__,
              "device": device, "probe": run_probe(threads, device, torch)})
        return 0
    except Exception as e:  # noqa: BLE001 -- one JSON error row whatever failed
        log(f"probe failed: {one_line(e)}")
        emit(error_row(e))
        return 1


def main(argv=None) -> int:
    try:
        args = parse_args(sys.argv[1:] if argv is None else argv)
    except TwinError as e:
        log(str(e))
        emit(error_row(e))
        return 1
    redirect_stdout_to_stderr()
    args.det_on = args.deterministic == "on" or (args.deterministic == "auto"
                                                 and args.mode == "eager")
    if args.det_on:
        # cuBLAS needs this before its first handle for deterministic mode on CUDA.
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    if args.probe:
        return _probe(args)
    from .resources import TargetClock
    args.target_clock = TargetClock(args.target_metric, args.target_score)
    from .run import RESULT_KEYS, dump_augmented, dump_batches, run   # torch-free at import
    result = {k: None for k in RESULT_KEYS}
    result.update({
        "schema": SCHEMA, "ok": True, "available": True,
        "python_version": platform.python_version(), "device": args.device,
        "mode": args.mode, "dtype": args.dtype, "threads": args.threads, "seed": args.seed,
    })
    try:
        if args.dump_augmented is not None:
            result = dump_augmented(args)
        elif args.dump_batches is not None:
            result = dump_batches(args)
        else:
            run(args, result)
    except Unavailable as e:
        result["available"] = False
        result["unavailable_reason"] = one_line(e)
        log(f"unavailable: {result['unavailable_reason']}")
        emit(result)
        return 0
    except TwinError as e:
        log(f"error: {e}")
        emit(error_row(e))
        return 1
    except Exception as e:  # noqa: BLE001  -- anything else is a one-line error too
        traceback.print_exc(file=sys.stderr)
        emit(error_row(f"{type(e).__name__}: {e}"))
        return 1
    emit(result)
    return 0
