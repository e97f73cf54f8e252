"""The gpt family's timed training loop and validation (twin/text.py for the data rules).

Step s (0-based): rows r = 0..B-1 start at philox.batch_window_starts(seed, s, B, n_train,
T) (all steps computed up front and uploaded once); x = train[start + 0..T-1],
y = train[start + 1..T] gathered on the device inside the timed step; lr = scheduled_lr
of step s + 1 on every group; zero_grad; forward + mean cross-entropy over the B*T
positions (logits in fp32); backward; clip_grad_norm_(grad_clip) when grad_clip > 0 (its
pre-clip total norm kept per step); optimizer step.

Validation after steps eval_interval, 2*eval_interval, ... and after the last step (step
numbers = steps completed): fixed windows k = 0..W-1 (W = eval_window_count), window k
= val[k*T .. k*T+T], in batches of the recipe's B with the eager module in eval mode,
no_grad, in the training dtype; loss = sum in float64 of the per-token fp32 losses /
(W*T). Evaluations are outside the per-step timers and subtracted from the wall time
(synchronised around each on CUDA).

Data parallel (twin/dist.py, N ranks): rank r takes rows r*B .. r*B+B-1 of the step's
N*B windows, fwd is the DDP-wrapped model; validation on rank 0 while the others wait at
a barrier (inside the evaluation time); the step losses are averaged over ranks after the
loop; tokens_per_s counts the N*B*T tokens of a step."""
from __future__ import annotations

import time

import numpy as np
import torch
import torch.nn.functional as F

import philox

from .profile import StepProfiler
from .common import TwinError, cpu_load_snapshot, cpu_window, log
from .compiled import compile_stats, compile_step, set_lr, use_tensor_lr
from .resources import EnergyWindow, memory_record
from .text import eval_window_count


class Windows:
    """Batches of windows of a resident token split: rows gathered with one index tensor."""

    def __init__(self, tokens_t, context, device):
        self.tokens = tokens_t
        self.ar = torch.arange(context, dtype=torch.int64, device=device)

    def batch(self, starts_t):
        idx = starts_t.unsqueeze(1) + self.ar
        return self.tokens[idx], self.tokens[idx + 1]


def train_starts(seed, steps, batch, n_train, context, device, rank=0, ranks=1):
    """(steps, B) int64 window starts of every step, on the device: rows rank*B ..
    rank*B+B-1 of the step's ranks*B rows (data parallelism, twin/dist.py)."""
    st = philox.batch_window_starts(seed, np.arange(steps, dtype=np.uint64), ranks * batch,
                                    n_train, context)
    st = np.ascontiguousarray(st[:, rank * batch:(rank + 1) * batch])
    return torch.from_numpy(st).to(torch.device(device))


def lm_loss(logits, y, reduction="mean"):
    return F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), y.reshape(-1),
                           reduction=reduction)


def evaluate_val(model, val, starts_t, batch, autocast, dev):
    """Mean per-token loss over the fixed validation windows, as a float64 device tensor."""
    model.eval()
    total = torch.zeros((), dtype=torch.float64, device=dev)
    with torch.no_grad():
        for s in range(0, starts_t.shape[0], batch):
            x, y = val.batch(starts_t[s:s + batch])
            with autocast():
                logits = model(x)
            total += lm_loss(logits, y, reduction="none").double().sum()
    model.train()
    return total / float(starts_t.shape[0] * val.ar.shape[0])


def eval_steps(total, interval):
    out = list(range(interval, total + 1, interval))
    return out if out and out[-1] == total else out + [total]


def train_and_evaluate_lm(args, cfg, result, model, fwd, params, optimizer, autocast,
                          schedule, corpus, device, ctx=None):
    """ctx: a data-parallel rank's DistContext (twin/dist.py), else None. fwd is then the
    DDP-wrapped model (gradients averaged over ranks in backward), model the bare one."""
    dev = torch.device(device)
    rank, ranks = (0, 1) if ctx is None else (ctx.rank, ctx.world)
    B, T = cfg["batch"], cfg["context"]
    n_train, n_val = corpus["n_train"], corpus["n_val"]
    total = cfg["steps"] if args.max_steps <= 0 else min(cfg["steps"], args.max_steps)
    if args.warmup >= total:
        raise TwinError(f"--warmup {args.warmup} leaves no timed step ({total} steps in all)")
    n_windows = eval_window_count(n_val, T, cfg["eval_windows"])
    if n_windows < 1:
        raise TwinError(f"the validation split ({n_val} tokens) holds no window of {T}+1")
    ids = torch.from_numpy(corpus["ids"]).to(dev)
    train = Windows(ids[:n_train], T, dev)
    val = Windows(ids[n_train:], T, dev)
    starts_t = train_starts(args.seed, total, B, n_train, T, device, rank, ranks)
    val_starts_t = torch.arange(n_windows, dtype=torch.int64, device=dev) * T
    evals = eval_steps(total, cfg["eval_interval"])
    lr_at = schedule.resolve(cfg["lr"], 1, total)
    result.update({"steps": total, "warmup": args.warmup, "batch": B,
                   "lr_schedule": lr_at.describe(), "n_val_windows": n_windows})
    scheduled = not lr_at.is_constant
    clip = cfg["grad_clip"]
    plist = [p for _, p, _ in params]
    V = len(corpus["vocab"])
    grad_norms = torch.zeros(total, dtype=torch.float32, device=dev)

    def train_step(starts):
        """One whole step; the unit torch.compile gets in the compiled modes. Returns the
        loss and the pre-clip gradient norm (None without clipping)."""
        x, y = train.batch(starts)
        optimizer.zero_grad(set_to_none=True)
        with autocast():
            logits = fwd(x)
            loss = lm_loss(logits, y)
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(plist, clip) if clip > 0.0 else None
        optimizer.step()
        return loss.detach(), norm

    if scheduled:
        use_tensor_lr(optimizer, args.mode, torch)
    run_step, mark_step = compile_step(train_step, args.mode, result, torch)

    def step(i):
        if scheduled:
            set_lr(optimizer, lr_at(i + 1))        # scheduled_lr takes the 1-based step
        loss, norm = run_step(starts_t[i])
        if norm is not None:
            grad_norms[i].copy_(norm)
        return loss

    losses = torch.zeros(total, dtype=torch.float32, device=dev)
    val_losses = torch.zeros(len(evals), dtype=torch.float64, device=dev)
    cuda = device == "cuda"
    if cuda:
        ev_start = [torch.cuda.Event(enable_timing=True) for _ in range(total)]
        ev_end = [torch.cuda.Event(enable_timing=True) for _ in range(total)]
        torch.cuda.synchronize()
    host_ms = [0.0] * total
    compile_s = None
    eval_s_timed = 0.0   # evaluation time inside the timed (post-warm-up) wall clock
    eval_s = 0.0
    per_rank = "" if ctx is None else f" per rank, {ranks} ranks"
    log(f"training: mode={args.mode} dtype={args.dtype} {total} steps (batch {B} x {T} "
        f"tokens{per_rank}, vocab {V}), warmup {args.warmup}, optimizer {result['optimizer']} "
        f"({result['adam_impl']}), attention {result['attention_impl']}, val {n_windows} "
        f"windows after steps {evals[:4]}{'...' if len(evals) > 4 else ''}")
    # Time to target and energy (twin/resources.py): the validation loss of each evaluation
    # against the target until it is reached; energy over the timed steps, evaluations out.
    clock = getattr(args, "target_clock", None) if ctx is None else None
    energy = EnergyWindow(device, torch)
    profiler = StepProfiler(torch, getattr(args, "profile", 0), args.warmup, cuda,
                            getattr(args, "profile_trace", None))
    wall_t0 = time.perf_counter() if args.warmup == 0 else None
    load_t0 = cpu_load_snapshot() if args.warmup == 0 else None
    if args.warmup == 0:
        energy.start()
    next_eval = 0
    for i in range(total):
        if i == args.warmup and i > 0:
            if cuda:
                torch.cuda.synchronize()
            load_t0 = cpu_load_snapshot()
            wall_t0 = time.perf_counter()
            energy.start()
        if mark_step is not None:
            mark_step()
        profiler.begin(i)
        t = time.perf_counter()
        if cuda:
            ev_start[i].record()
            loss = step(i)
            ev_end[i].record()
        else:
            loss = step(i)
            host_ms[i] = (time.perf_counter() - t) * 1e3
        losses[i].copy_(loss.detach())
        profiler.end(i)
        if i == 0 and args.mode != "eager":
            if cuda:
                torch.cuda.synchronize()
            compile_s = time.perf_counter() - t
        if i + 1 == evals[next_eval]:
            if cuda:
                torch.cuda.synchronize()
            e0 = time.perf_counter()
            energy.pause()
            if rank == 0:
                val_losses[next_eval].copy_(evaluate_val(model, val, val_starts_t, B,
                                                         autocast, dev))
            if cuda:
                torch.cuda.synchronize()
            if clock is not None and clock.wants_evaluation:
                clock.evaluated(float(val_losses[next_eval].item()), i + 1)
            energy.resume()
            if ctx is not None:
                ctx.barrier()          # the other ranks wait here, outside the step timers
            dt = time.perf_counter() - e0
            eval_s += dt
            if i >= args.warmup:
                eval_s_timed += dt
            next_eval += 1
    if cuda:
        torch.cuda.synchronize()
    wall_t1 = time.perf_counter()
    result["cpu_window"] = cpu_window(load_t0, cpu_load_snapshot())
    if profiler.n:
        result["profile"] = profiler.result()
    energy.stop()
    if compile_s is not None:
        log(f"compile: {compile_s:.1f} s (step 0" + (", inside the warm-up)" if args.warmup
                                                      else ", timed: --warmup 0)"))
    timed = total - args.warmup
    if cuda:
        step_ms = [ev_start[i].elapsed_time(ev_end[i]) for i in range(args.warmup, total)]
        result["timer"] = "event"
    else:
        step_ms = host_ms[args.warmup:]
        result["timer"] = "wall"
    wall_ms = (wall_t1 - wall_t0 - eval_s_timed) * 1e3 / timed
    srt = sorted(step_ms)
    median_ms = (srt[(len(srt) - 1) // 2] + srt[len(srt) // 2]) / 2
    compile_stats(args.mode, result, torch)
    per_rank_ms = None
    if ctx is not None:
        # Every rank's step loss is the mean over its B*T positions: the mean of the ranks'
        # is the N*B*T mean (as the C++ combine_train_stats); summed in float64.
        losses = ctx.mean_over_ranks(losses)
        per_rank_ms = ctx.gather_scalar(median_ms, device)
    loss_list = losses.cpu().tolist()
    vl = val_losses.cpu().tolist()
    prev_eval = max([s for s in evals if s < total], default=0)
    result.update({
        "step_times_ms": step_ms,
        "median_step_ms": median_ms,
        "wall_ms_per_step": wall_ms,
        "tokens_per_s": ranks * B * T * 1e3 / wall_ms if wall_ms > 0 else None,
        "per_rank_step_ms": per_rank_ms,
        "compile_seconds": compile_s,
        "losses": loss_list,
        "train_loss_last_epoch": sum(loss_list[prev_eval:]) / (total - prev_eval),
        "val_losses": [{"step": s, "loss": v} for s, v in zip(evals, vl)],
        "final_val_loss": vl[-1],
        "test_top1": None,
        "test_loss": vl[-1],
        "eval_dtype": args.dtype,
        "eval_seconds": eval_s,
        "grad_norms": grad_norms.cpu().tolist() if clip > 0.0 else None,
    })
    if ctx is None:
        if clock is not None:
            result["time_to_target"] = clock.record(total)
        result["energy"] = energy.record(timed, B * T, "token")
        result["memory"] = memory_record(device, torch)
    log("val loss " + ", ".join(f"{s}: {v:.4f}" for s, v in zip(evals, vl)))
    log(f"done: final val loss {vl[-1]:.4f}  median step {result['median_step_ms']:.3f} ms  "
        f"{result['tokens_per_s']:.0f} tokens/s")


def dump_batch_inputs(seed, steps, cfg, corpus, device):
    """The int32 inputs of steps 0..steps-1, (steps, B, T), gathered as in training."""
    dev = torch.device(device)
    B, T = cfg["batch"], cfg["context"]
    ids = torch.from_numpy(corpus["ids"]).to(dev)
    train = Windows(ids[:corpus["n_train"]], T, dev)
    starts_t = train_starts(seed, steps, B, corpus["n_train"], T, device)
    xs = [train.batch(starts_t[i])[0] for i in range(steps)]
    return torch.stack(xs).to(torch.int32).cpu().numpy()
