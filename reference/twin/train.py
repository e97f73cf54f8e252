"""The timed training loop and the evaluation. Batches: epoch e's Philox order
(philox.shuffle_order), batch b = order[b*B:(b+1)*B], gathered with index_select from the
resident training set -- or, with an augmenter, from that epoch's augmented copy, made
before the epoch's first step (inside the wall time, outside the per-step timers)."""
from __future__ import annotations

import time

import numpy as np
import torch

import philox

from .profile import StepProfiler
from .common import TwinError, cpu_load_snapshot, cpu_window, log
from .compiled import compile_stats, compile_step, set_lr, use_tensor_lr
from .resources import EnergyWindow, memory_record


def _plan_batches(args, recipe, n_train, device, result):
    B = int(recipe["batch"])
    drop_last = bool(recipe.get("drop_last", True))
    epochs = int(args.epochs if args.epochs is not None else recipe["epochs"])
    steps_per_epoch = n_train // B if drop_last else -(-n_train // B)
    if steps_per_epoch < 1:
        raise TwinError(f"batch {B} is larger than the training set ({n_train}) with drop_last")
    total = epochs * steps_per_epoch
    if args.max_steps > 0:
        total = min(total, args.max_steps)
    epochs_run = -(-total // steps_per_epoch)
    if args.warmup >= total:
        raise TwinError(f"--warmup {args.warmup} leaves no timed step ({total} steps in all)")
    orders = np.stack([philox.shuffle_order(args.seed, e, n_train) for e in range(epochs_run)])
    orders_t = torch.from_numpy(orders).to(torch.device(device))
    batches = []   # (epoch, view into orders_t) -- views, no host work in the loop
    for e in range(epochs_run):
        for b in range(steps_per_epoch):
            if len(batches) == total:
                break
            batches.append((e, orders_t[e, b * B:min((b + 1) * B, n_train)]))
    result.update({"epochs": epochs, "epochs_run": epochs_run, "batch": B,
                   "steps_per_epoch": steps_per_epoch, "steps": total,
                   "warmup": args.warmup, "drop_last": drop_last})
    return batches, total, steps_per_epoch


def train_and_evaluate(args, recipe, result, model, optimizer, loss_fn, autocast, schedule,
                       augmenter, state, d, device):
    train_x, train_y = d["train_x_t"], d["train_y_t"]
    n_train = train_x.shape[0]
    batches, total, steps_per_epoch = _plan_batches(args, recipe, n_train, device, result)
    lr_at = schedule.resolve(float(recipe["optimizer"].get("lr", 1e-3)), steps_per_epoch,
                             total)
    result["lr_schedule"] = lr_at.describe()
    scheduled = not lr_at.is_constant

    def train_step(x_src, idx):
        """One whole step; the unit torch.compile gets in the compiled modes."""
        x = x_src.index_select(0, idx)
        y = train_y.index_select(0, idx)
        optimizer.zero_grad(set_to_none=True)
        with autocast():
            out = model(x)
            loss = loss_fn(out, y)
        loss.backward()
        optimizer.step()
        return loss.detach()

    if scheduled:
        use_tensor_lr(optimizer, args.mode, torch)
    run_step, mark_step = compile_step(train_step, args.mode, result, torch)

    def step(x_src, idx, i):
        state.step = i
        if scheduled:
            set_lr(optimizer, lr_at(i + 1))     # scheduled_lr takes the 1-based step
        return run_step(x_src, idx)

    dev = torch.device(device)
    losses = torch.zeros(total, dtype=torch.float32, device=dev)
    cuda = device == "cuda"
    if cuda:
        ev_start = [torch.cuda.Event(enable_timing=True) for _ in range(total)]
        ev_end = [torch.cuda.Event(enable_timing=True) for _ in range(total)]
        torch.cuda.synchronize()
    host_ms = [0.0] * total
    compile_s = None
    log(f"training: mode={args.mode} dtype={args.dtype} {total} steps "
        f"({steps_per_epoch}/epoch, batch {result['batch']}), warmup {args.warmup}, optimizer "
        f"{result['optimizer']} ({result['adam_impl']})"
        + (f", augment pad {augmenter.pad} flip {augmenter.flip}" if augmenter else ""))
    x_src = train_x
    epoch_now = -1
    # Time to target and energy (twin/resources.py): an evaluation after every epoch until
    # the target is reached, left out of the step times, the wall time and the energy.
    clock = getattr(args, "target_clock", None)
    energy = EnergyWindow(device, torch)
    profiler = StepProfiler(torch, getattr(args, "profile", 0), args.warmup, cuda,
                            getattr(args, "profile_trace", None))
    eval_s_timed = 0.0
    wall_t0 = time.perf_counter() if args.warmup == 0 else None
    load_t0 = cpu_load_snapshot() if args.warmup == 0 else None
    if args.warmup == 0:
        energy.start()
    for i, (e, idx) in enumerate(batches):
        if e != epoch_now and epoch_now >= 0 and clock is not None and clock.wants_evaluation:
            if cuda:
                torch.cuda.synchronize()
            e0 = time.perf_counter()
            energy.pause()
            top1, _ = _scores(args, model, loss_fn, autocast, d, dev)
            model.train()
            clock.evaluated(top1, i)
            energy.resume()
            if wall_t0 is not None:
                eval_s_timed += time.perf_counter() - e0
        if i == args.warmup and i > 0:
            if cuda:
                torch.cuda.synchronize()
            load_t0 = cpu_load_snapshot()
            wall_t0 = time.perf_counter()
            energy.start()
        if e != epoch_now:
            epoch_now = e
            if augmenter is not None:
                x_src = augmenter.epoch(e)
        if mark_step is not None:
            mark_step()
        profiler.begin(i)
        t = time.perf_counter()
        if cuda:
            ev_start[i].record()
            loss = step(x_src, idx, i)
            ev_end[i].record()
        else:
            loss = step(x_src, idx, i)
            host_ms[i] = (time.perf_counter() - t) * 1e3
        losses[i].copy_(loss.detach())
        profiler.end(i)
        if i == 0 and args.mode != "eager":
            # The first call compiles. One sync here (inside the warm-up when warmup >= 1)
            # measures it on the host clock; event times of later steps are unaffected.
            if cuda:
                torch.cuda.synchronize()
            compile_s = time.perf_counter() - t
    if cuda:
        torch.cuda.synchronize()
    wall_t1 = time.perf_counter()
    result["cpu_window"] = cpu_window(load_t0, cpu_load_snapshot())
    if profiler.n:
        result["profile"] = profiler.result()
    energy.stop()
    if compile_s is not None:
        log(f"compile: {compile_s:.1f} s (step 0, inside the warm-up)" if args.warmup >= 1
            else f"compile: {compile_s:.1f} s (step 0, timed: --warmup 0)")
    timed = total - args.warmup
    if cuda:
        step_ms = [ev_start[i].elapsed_time(ev_end[i]) for i in range(args.warmup, total)]
        result["timer"] = "event"
    else:
        step_ms = host_ms[args.warmup:]
        result["timer"] = "wall"
    result["step_times_ms"] = step_ms
    result["wall_ms_per_step"] = (wall_t1 - wall_t0 - eval_s_timed) * 1e3 / timed
    result["compile_seconds"] = compile_s
    compile_stats(args.mode, result, torch)
    loss_list = losses.cpu().tolist()
    result["losses"] = loss_list
    last_e = batches[-1][0]
    last = [l for (e, _), l in zip(batches, loss_list) if e == last_e]
    result["train_loss_last_epoch"] = sum(last) / len(last)
    srt = sorted(step_ms)
    result["median_step_ms"] = (srt[(len(srt) - 1) // 2] + srt[len(srt) // 2]) / 2
    evaluate(args, result, model, loss_fn, autocast, d, dev)
    if clock is not None:
        clock.evaluated(result["test_top1"], total)
        result["time_to_target"] = clock.record(total)
    result["energy"] = energy.record(timed, int(recipe["batch"]), "sample")
    result["memory"] = memory_record(device, torch)


def evaluate(args, result, model, loss_fn, autocast, d, dev):
    """Over the whole test set in --eval-batch batches, with the eager module (parameters
    shared with a compiled one), eval mode (BatchNorm's running statistics, no dropout),
    no_grad, in the training dtype."""
    top1, loss = _scores(args, model, loss_fn, autocast, d, dev)
    result["test_top1"] = top1
    result["test_loss"] = loss
    result["eval_dtype"] = args.dtype
    log(f"done: test top-1 {result['test_top1']:.2f}%  test loss {result['test_loss']:.4f}  "
        f"median step {result['median_step_ms']:.3f} ms")


def _scores(args, model, loss_fn, autocast, d, dev):
    """(test top-1 %, test loss) over the test set; leaves the model in eval mode."""
    test_x, test_y = d["test_x_t"], d["test_y_t"]
    n_test = test_x.shape[0]
    model.eval()
    correct = torch.zeros((), dtype=torch.int64, device=dev)
    loss_sum = torch.zeros((), dtype=torch.float64, device=dev)
    with torch.no_grad():
        for s in range(0, n_test, args.eval_batch):
            xb = test_x[s:s + args.eval_batch]
            yb = test_y[s:s + args.eval_batch]
            with autocast():
                out = model(xb)
                lsum = loss_fn(out, yb, reduction="sum")
            loss_sum += lsum.double()
            correct += (out.argmax(dim=1) == yb).sum()
    return 100.0 * int(correct.item()) / n_test, float(loss_sum.item()) / n_test
