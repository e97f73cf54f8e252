"""`--profile N`: torch.profiler over N training steps after the warm-up, each step's
events grouped into the categories of noeira-bench profile (kernels/profiling/op_category.h)
by the table below. Unknown names land in "other" and are listed by name in
result["profile"]["unmapped"], so nothing is dropped silently.

Attribution: every event's self time (its time minus its children's) goes to the category
of the nearest event on its path up to the step's range, itself first, whose name the table
knows; an event with no known ancestor goes to "other" under its own name. So an eager
aten::linear's GEMM (the self time of its aten::addmm child) counts as gemm, and a compiled
step's fused kernels count by their names (cpp_fused_..._gelu -> activation)."""
from __future__ import annotations

import re

CATEGORIES = ("gemm", "convolution", "attention", "normalisation", "activation", "embedding",
              "loss", "optimizer", "data", "copy", "other")

# (pattern, category), first match wins; matched against the event name with "aten::"
# and autograd's "evaluate_function: " / "Backward0" wrappers removed, lower-cased.
_TABLE = [
    (r"log_softmax|nll_loss|cross_entropy|mse_loss|(^|_)loss", "loss"),
    (r"scaled_dot_product|flash_attention|efficient_attention|softmax|attention|masked_fill",
     "attention"),
    (r"(^|_)(mm|addmm|bmm|baddbmm|matmul|linear|_addmm_activation|mkldnn_linear|dot|mv|"
     r"addmv|mkldnn_matmul)($|_)", "gemm"),
    (r"extern_kernels\.(mm|addmm|bmm)", "gemm"),
    (r"conv|mkldnn_convolution|cudnn_convolution", "convolution"),
    (r"layer_norm|batch_norm|group_norm|_norm($|_)|rsqrt|var_mean", "normalisation"),
    (r"gelu|relu|tanh|sigmoid|silu|dropout|max_pool|avg_pool|adaptive_avg_pool|threshold|"
     r"^add$|^add_$|^mul$|^mul_$|^sub$|^div$|^pow|^neg|^exp|erf|^where|bernoulli|^sum$|"
     r"^mean$", "activation"),
    (r"embedding|index_select|^cat$|^stack$|patch", "embedding"),
    (r"adam|sgd|optimizer|_foreach|clip_grad|^norm$|linalg_vector_norm|accumulate_?grad|"
     r"^lerp|^addcmul|^addcdiv|^sqrt|^clamp|^reciprocal", "optimizer"),
    (r"index$|^index_|gather|randperm|randint|^arange|unfold|flip|^roll|narrow|^slice$|"
     r"^select$|^to$|_to_copy|pin_memory|^uniform", "data"),
    (r"copy|clone|contiguous|^t$|transpose|permute|view|reshape|expand|as_strided|^empty|"
     r"zeros|^zero_|fill_|^ones|split|chunk|unsqueeze|squeeze|flatten|detach|^alias|"
     r"^resize|^set_|cast|_unsafe_view|^item|_local_scalar_dense|^full|^lift|pad", "copy"),
]
_COMPILED = [(re.compile(p), c) for p, c in _TABLE]
# Ranges that carry no work of their own: their self time is the Python and dispatcher
# time between ops, which "other" shows under their names.
_STEP = re.compile(r"step \d+")  # our record_function range around each step
_WRAPPERS = re.compile(r"^(profilerstep|step \d+|torch-compiled region|compiledfunction|"
                       r"## call compiledfxgraph)", re.I)


def _key(name: str) -> str:
    n = name.strip()
    n = n.split("evaluate_function: ", 1)[-1]
    n = n.split("::")[-1]                           # aten::mm, torch::autograd::AccumulateGrad
    n = re.sub(r"Backward\d*$", "", n)
    n = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", n)   # AddmmBackward0 -> addmm
    return n.lower()


def category_of(name: str):
    """The category of one event name, or None when the table does not know it."""
    if _WRAPPERS.match(name):
        return None
    k = _key(name)
    for pattern, category in _COMPILED:
        if pattern.search(k):
            return category
    return None


class StepProfiler:
    """Wraps the twin's training loop: begin(i) / end(i) around step i's call."""

    def __init__(self, torch, steps: int, warmup: int, cuda: bool, trace: str | None):
        self.torch = torch
        self.n = max(0, int(steps))
        self.first = warmup
        self.cuda = cuda
        self.trace = trace
        self.prof = None
        self.range = None

    def active(self, i):
        return self.n > 0 and self.first <= i < self.first + self.n

    def begin(self, i):
        if not self.active(i):
            return
        tp = self.torch.profiler
        if i == self.first:
            acts = [tp.ProfilerActivity.CPU]
            if self.cuda:
                acts.append(tp.ProfilerActivity.CUDA)
            self.prof = tp.profile(activities=acts, record_shapes=True)
            self.prof.__enter__()
        if self.cuda:
            self.torch.cuda.synchronize()
        self.range = self.torch.profiler.record_function(f"step {i - self.first}")
        self.range.__enter__()

    def end(self, i):
        if not self.active(i):
            return
        if self.cuda:
            self.torch.cuda.synchronize()
        self.range.__exit__(None, None, None)
        if i == self.first + self.n - 1:
            self.prof.__exit__(None, None, None)

    def result(self):
        """{steps, step_ms, categories {name: ms per step}, top_ops, unmapped, device_time}."""
        if self.prof is None:
            return None
        if self.trace:
            self.prof.export_chrome_trace(self.trace)
        events = list(self.prof.events())
        device_type = self.torch.autograd.DeviceType
        host = [e for e in events if getattr(e, "device_type", device_type.CPU) == device_type.CPU]
        # On a GPU, record_function also leaves a device-side "step N" annotation: only the
        # host ranges count as steps (the annotations doubled the step count once).
        steps = [e for e in host if _STEP.fullmatch(e.name)]
        n = max(1, len(steps))
        per_cat = {c: 0.0 for c in CATEGORIES}
        per_op = {}
        unmapped = {}
        step_ms = []
        for step in steps:
            self._walk(step, None, per_cat, per_op, unmapped)
            for root in self._other_threads(step, host):
                self._visit(root, None, per_cat, per_op, unmapped)
            step_ms.append(self._step_us(step, events, device_type) / 1e3)
        top = sorted(per_op.items(), key=lambda kv: -kv[1]["us"])[:25]
        return {
            "steps": len(steps),
            "device_time": bool(self.cuda),
            "step_ms": step_ms,
            "categories_ms": {c: v / 1e3 / n for c, v in per_cat.items()},
            "top_ops": [{"op": k[0], "shape": k[1], "category": v["category"],
                         "ms_per_step": v["us"] / 1e3 / n, "calls_per_step": v["calls"] / n}
                        for k, v in top],
            "unmapped": sorted(unmapped, key=lambda k: -unmapped[k]),
        }

    def _other_threads(self, step, host):
        """On a GPU, the top-level events of the other host threads that start inside the
        step: CUDA autograd runs the backward on its own device thread, outside the step's
        range (on the CPU it runs on the calling thread, inside it)."""
        if not self.cuda:
            return []
        lo, hi = step.time_range.start, step.time_range.end
        return [e for e in host if e.cpu_parent is None and e.thread != step.thread
                and lo <= e.time_range.start < hi]

    def _step_us(self, step, events, device_type):
        """A step's time: on the CPU its range; on a GPU the busy time of the device work
        that starts inside it (begin and end synchronise, so all of the step's kernels do),
        or, where the profiler lists no device events, the range's device total."""
        if not self.cuda:
            return step.cpu_time_total
        lo, hi = step.time_range.start, step.time_range.end
        busy = [e.time_range.elapsed_us() for e in events
                if getattr(e, "device_type", None) == device_type.CUDA
                and not _STEP.fullmatch(e.name) and lo <= e.time_range.start < hi]
        return sum(busy) if busy else step.device_time_total

    def _self_us(self, e):
        if self.cuda:
            return getattr(e, "self_device_time_total", 0.0)
        return e.self_cpu_time_total

    def _walk(self, e, inherited, per_cat, per_op, unmapped):
        for child in e.cpu_children:
            self._visit(child, inherited, per_cat, per_op, unmapped)

    def _visit(self, e, inherited, per_cat, per_op, unmapped):
        """Counts e's self time under its category (or the inherited one), then its subtree."""
        own = category_of(e.name)
        cat = own or inherited
        t = self._self_us(e)
        if t > 0:
            if cat is None:
                unmapped[e.name] = unmapped.get(e.name, 0.0) + t
                cat = "other"
            per_cat[cat] += t
            shape = str(getattr(e, "input_shapes", "") or "")[:80]
            rec = per_op.setdefault((e.name, shape), {"us": 0.0, "calls": 0, "category": cat})
            rec["us"] += t
            rec["calls"] += 1
        self._walk(e, cat if own else inherited, per_cat, per_op, unmapped)
