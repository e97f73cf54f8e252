"""Data-parallel training of the gpt family over N ranks (--ranks N, --zero {0,1}), the
twin of parallel/distributed_trainer.h (DistributedAutoregressiveTrainer).

The parent (the process the harness started) checks what it can (backend, GPUs), then
starts N processes with torch.multiprocessing.spawn; they meet over a file:// store in a
temporary directory and form a process group (gloo on the CPU, nccl on CUDA, one GPU per
rank). Each rank runs the single-process gpt path (twin/lm_run.py, twin/lm_train.py) with
a DistContext in args.dist:

  - rank r trains rows r*B .. r*B+B-1 of each step's global batch of N*B Philox windows
    (B = the recipe's batch, per rank, as ours), so N ranks see what one process with an
    N-times batch sees;
  - stage 0: the model wrapped in torch.nn.parallel.DistributedDataParallel (gradients
    averaged over ranks after backward), every rank runs the whole AdamW;
    stage 1: the same DDP plus torch.distributed.optim.ZeroRedundancyOptimizer around
    AdamW with twin/gpt.py's two parameter groups (each rank keeps the Adam state of its
    share of the parameters, steps it and broadcasts it);
  - clip_grad_norm_ after DDP's averaging, before the step (the gradients are whole on
    every rank in both stages, so every rank computes the same norm);
  - the per-step losses are averaged over ranks once after training (the C++
    combine_train_stats), validation runs on rank 0 while the others wait at a barrier
    (inside the evaluation time, outside the step timers);
  - rank 0 hands its result row to the parent (a pickle in the temporary directory); the
    parent alone writes stdout. Ranks > 0 log nothing (torch warnings off too) unless they
    fail: "[twin rank R] error: ...".

A rank that fails makes mp.spawn stop the others and raise in the parent, which turns it
into an error row naming the rank (or an unavailable row when the rank found the variant
unavailable). Teardown is the exception: once every rank has passed its last barrier and
marked itself finished, a failure while the process group is destroyed (a rank's
exception or death) leaves rank 0's row standing with "teardown_failure" set."""
from __future__ import annotations

import os
import pickle
import shutil
import sys
import tempfile
import time
import traceback

from .common import TwinError, Unavailable, log, one_line, set_log_quiet

ZERO_STAGES = (0, 1)


def wants_distributed(args) -> bool:
    """--ranks > 1 or an explicit --zero (as the C++ `train --zero`: one rank is still the
    distributed trainer)."""
    return args.ranks > 1 or args.zero is not None


class DistContext:
    """What a rank knows about the run: rank, world size, backend, ZeRO stage."""

    def __init__(self, rank, world, backend, zero):
        self.rank, self.world, self.backend, self.zero = rank, world, backend, zero

    # ---- model and optimizer
    def wrap_model(self, model, device):
        import torch
        from torch.nn.parallel import DistributedDataParallel as DDP
        ids = [torch.cuda.current_device()] if device == "cuda" else None
        # The model's buffers (the bool causal mask, the positions) are constants built from
        # the recipe: DDP neither broadcasts them at construction (gloo has no bool
        # broadcast: "Invalid scalar type") nor per step. The parameters are broadcast
        # from rank 0 once (the same Philox values on every rank anyway).
        names = [n for n, _ in model.named_buffers()]
        if names:
            setter = getattr(DDP, "_set_params_and_buffers_to_ignore_for_model", None)
            if setter is not None:
                setter(model, names)
            else:
                model._ddp_params_and_buffers_to_ignore = names
        return DDP(model, device_ids=ids, broadcast_buffers=False)

    def construct_optimizer(self):
        """make_optimizer's constructor: the plain class for stage 0, ZeroRedundancyOptimizer
        around it for stage 1 (it accepts parameter groups since torch 1.x: the groups are
        partitioned parameter by parameter, every rank's local optimizer keeps both groups)."""
        if self.zero == 0:
            return None
        try:
            from torch.distributed.optim import ZeroRedundancyOptimizer
        except Exception as e:
            raise Unavailable(f"--zero 1 needs torch.distributed.optim.ZeroRedundancyOptimizer: "
                              f"{one_line(e)}")

        def build(cls, plist, **kw):
            return ZeroRedundancyOptimizer(plist, optimizer_class=cls, **kw)
        return build

    # ---- collectives
    def barrier(self):
        import torch.distributed as dist
        dist.barrier()

    def mean_over_ranks(self, t):
        """float32 tensor -> the element-wise mean over ranks (summed in float64)."""
        import torch.distributed as dist
        d = t.double()
        dist.all_reduce(d)
        return (d / self.world).float()

    def gather_scalar(self, value, device):
        """Each rank's float -> [rank 0's, rank 1's, ...] on every rank."""
        import torch
        import torch.distributed as dist
        v = torch.zeros(self.world, dtype=torch.float64, device=torch.device(device))
        v[self.rank] = float(value)
        dist.all_reduce(v)
        return v.cpu().tolist()


# ---------------------------------------------------------------- the parent
def _backend(torch, device, ranks):
    import torch.distributed as dist
    if not dist.is_available():
        raise Unavailable(f"--ranks/--zero need torch.distributed, which this torch "
                          f"{torch.__version__} build lacks")
    if device == "cuda":
        if not dist.is_nccl_available():
            raise Unavailable(f"--ranks/--zero on cuda need the nccl backend, which torch "
                              f"{torch.__version__} lacks")
        n = torch.cuda.device_count()
        if n < ranks:
            raise Unavailable(f"--ranks {ranks} on cuda needs {ranks} GPUs (one per rank), "
                              f"found {n}")
        return "nccl"
    if not dist.is_gloo_available():
        raise Unavailable(f"--ranks/--zero on the CPU need the gloo backend, which torch "
                          f"{torch.__version__} lacks")
    return "gloo"


def _read(path):
    try:
        with open(path, "rb") as f:
            return pickle.load(f)
    except (OSError, EOFError, pickle.UnpicklingError):
        return None


def _outcomes(tmp, ranks):
    out = {}
    for r in range(ranks):
        o = _read(os.path.join(tmp, f"rank{r}.pkl"))
        if o is not None:
            out[r] = o
    return out


def spawn_ranks(args, result, recipe, device, torch):
    """Runs the N ranks; fills result with rank 0's row. TwinError naming the rank when
    one fails, Unavailable when one found the variant unavailable."""
    import torch.multiprocessing as mp

    n = args.ranks
    zero = 0 if args.zero is None else args.zero
    backend = _backend(torch, device, n)
    if zero == 1:
        try:
            from torch.distributed.optim import ZeroRedundancyOptimizer  # noqa: F401
        except Exception as e:
            raise Unavailable(f"--zero 1 needs torch.distributed.optim.ZeroRedundancyOptimizer: "
                              f"{one_line(e)}")
    result.update({"ranks": n, "zero": zero})   # an unavailable row carries them too
    args.device = device            # every rank on the device the parent chose
    if args.threads is None and n > 1:
        args.threads = 1
    if args.threads is not None:
        # Read by the ranks' BLAS / OpenMP at import (the harness may have set them already).
        for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ.setdefault(var, str(args.threads))
    if backend == "gloo" and sys.platform.startswith("linux") and \
            os.path.isdir("/sys/class/net/lo"):
        os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")   # all ranks on this host
    tmp = tempfile.mkdtemp(prefix="noeira-twin-dist-")
    init_method = "file://" + os.path.join(tmp, "rendezvous")
    log(f"data parallel: {n} rank(s), {'ZeRO-1' if zero else 'DDP'}, backend {backend}, "
        f"{args.threads or 'default'} thread(s) per rank, rendezvous {init_method}")
    t0 = time.perf_counter()
    teardown = None
    try:
        try:
            mp.spawn(_rank_main, args=(args, dict(result), n, backend, zero, tmp, init_method),
                     nprocs=n, join=True)
        except (mp.ProcessRaisedException, mp.ProcessExitedException) as e:
            if not _all_finished(tmp, n):
                _raise_failure(e, _outcomes(tmp, n), result)
            # Every rank had finished its last collective: the failure is gloo's teardown
            # (closing sockets a peer still watches; seen as SIGABRT or "Connection closed by
            # peer"), after rank 0's result was written. The run stands; the log says so.
            teardown = one_line(getattr(e, "msg", "") or e) or type(e).__name__
        teardown = "; ".join(t for t in [teardown] + _teardown_errors(tmp, n) if t) or None
        if teardown is not None:
            log(f"data parallel: a rank failed while tearing the process group down, after "
                f"every rank had finished: {teardown}")
        o = _read(os.path.join(tmp, "rank0.pkl"))
        if o is None or o.get("kind") != "ok":
            raise TwinError("data parallel: rank 0 finished without a result")
        result.clear()
        result.update(o["result"])
        if teardown is not None:
            result["teardown_failure"] = teardown
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    log(f"data parallel: {n} rank(s) done in {time.perf_counter() - t0:.1f} s")
    return result


def _finished_marker(tmp, rank):
    return os.path.join(tmp, f"rank{rank}.finished")


def _teardown_path(tmp, rank):
    return os.path.join(tmp, f"rank{rank}.teardown")


def _teardown_errors(tmp, ranks):
    """The exceptions ranks caught in destroy_process_group, "rank R: ...", rank order."""
    texts = ((r, _read(_teardown_path(tmp, r))) for r in range(ranks))
    return [f"rank {r}: {text}" for r, text in texts if text is not None]


def _all_finished(tmp, ranks):
    return all(os.path.exists(_finished_marker(tmp, r)) for r in range(ranks))


def _wait_all_finished(tmp, ranks, timeout_s=600.0):
    """Returns once every rank has marked itself finished (a file each, not a gloo message:
    gloo's sockets are what is being torn down). A rank that dies first ends the job
    through mp.spawn; the timeout only bounds a hang."""
    t0 = time.monotonic()
    while not _all_finished(tmp, ranks):
        if time.monotonic() - t0 > timeout_s:
            raise TwinError(f"data parallel: the ranks did not all finish within {timeout_s:.0f} s")
        time.sleep(0.01)


def _raise_failure(exc, outcomes, result):
    """exc: mp.spawn's ProcessRaisedException / ProcessExitedException for the first rank
    the parent saw die; outcomes: what the failing ranks wrote before exiting. A rank that
    died without writing (killed by a signal, e.g. out of memory) is the cause; else the
    rank that failed first by its own clock (a peer's failure usually makes the others
    fail in their next collective: "Connection closed by peer")."""
    idx = exc.error_index
    # Rank 0 may have written its result before a peer failed (e.g. in the last barrier):
    # only failure records name a cause.
    failed = sorted(((r, o) for r, o in outcomes.items() if o.get("kind") != "ok"),
                    key=lambda kv: kv[1]["time"])
    if idx not in dict(failed):
        text = str(getattr(exc, "msg", "") or exc).strip()
        log(f"rank {idx}: {text}")
        lines = [ln for ln in text.splitlines() if ln.strip()]
        others = [str(k) for k, _ in failed]
        also = f" (then rank {', '.join(others)})" if others else ""
        raise TwinError(f"rank {idx} failed: "
                        f"{one_line(lines[-1]) if lines else type(exc).__name__}{also}")
    r, o = failed[0]
    others = [str(k) for k, _ in failed[1:]]
    also = f" (then rank {', '.join(others)})" if others else ""
    if o["kind"] == "unavailable":
        result.update({k: v for k, v in o["result"].items() if v is not None})
        raise Unavailable(o["message"])
    if o["kind"] == "unexpected":
        log(f"rank {r} traceback:\n{o['traceback'].rstrip()}")
    raise TwinError(f"rank {r} failed: {o['message']}{also}")


# ---------------------------------------------------------------- a rank
def _rank_main(rank, args, result, world, backend, zero, tmp, init_method):
    """mp.spawn's entry point in rank `rank`: run the single-process gpt path with a
    DistContext; rank 0 pickles its result row; every failing rank pickles what went wrong
    (then re-raises, so mp.spawn stops the others)."""
    import warnings
    if rank > 0:
        set_log_quiet(True)
        warnings.filterwarnings("ignore")
    path = os.path.join(tmp, f"rank{rank}.pkl")
    try:
        import torch
        import torch.distributed as dist
        if backend == "nccl":
            torch.cuda.set_device(rank)
        dist.init_process_group(backend, init_method=init_method, rank=rank,
                                world_size=world)
        args.rank = rank
        args.dist = DistContext(rank, world, backend, zero)
        from .run import run
        run(args, result)
        dist.barrier()          # every rank's collectives are done once all pass this
        if rank == 0:
            _write(path, {"kind": "ok", "result": result, "time": time.time()})
            path = os.path.join(tmp, "rank0.late.pkl")  # a later failure keeps the row
        # Nobody closes its sockets before every rank has returned from the barrier: gloo
        # aborts a peer whose pair closes under a pending read. A marker that cannot be
        # written raises here, before any rank could wait for it.
        _write(_finished_marker(tmp, rank), {"time": time.time()}, strict=True)
        _wait_all_finished(tmp, world)
        try:
            dist.destroy_process_group()
        except Exception as e:  # noqa: BLE001 -- the run is over and recorded
            text = f"{type(e).__name__}: {one_line(e)}"
            print(f"[twin rank {rank}] tearing the process group down failed after the run: "
                  f"{text}", file=sys.stderr, flush=True)
            _write(_teardown_path(tmp, rank), text)
    except Unavailable as e:
        _fail(path, rank, "unavailable", one_line(e), result)
        raise
    except TwinError as e:
        _fail(path, rank, "error", one_line(e), result)
        raise
    except Exception as e:
        _fail(path, rank, "unexpected", f"{type(e).__name__}: {one_line(e)}", result,
              traceback.format_exc())
        raise


def _fail(path, rank, kind, message, result, tb=None):
    what = "unavailable" if kind == "unavailable" else "error"
    print(f"[twin rank {rank}] {what}: {message}", file=sys.stderr, flush=True)
    _write(path, {"kind": kind, "message": message, "result": result, "time": time.time(),
                  "traceback": tb})


def _write(path, obj, strict=False):
    """Pickles obj to path atomically. strict: a failure raises; else it is reported on
    stderr only (a failing rank's record: the parent still sees the rank die)."""
    tmp = f"{path}.tmp"
    try:
        with open(tmp, "wb") as f:
            pickle.dump(obj, f)
        os.replace(tmp, path)
    except Exception as e:  # noqa: BLE001
        if strict:
            raise
        print(f"[twin rank ?] cannot write {path}: {one_line(e)}", file=sys.stderr, flush=True)

