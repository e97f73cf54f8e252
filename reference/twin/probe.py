"""--probe: the baseline probe (harness/env/baseline_probe.h runs the same on our side).

Before anything is timed, the same three kernels on the same shapes: an fp32 and a bf16
GEMM (n x n x n, torch.mm into a preallocated output) and a streaming kernel (y = max(x,
0) over arrays past the caches), at one thread and at --threads, each the best of timed
repetitions after one untimed call. With them, which math libraries this torch runs: its
BLAS (MKL, OpenBLAS or a reference BLAS -- Debian's torch takes whichever BLAS the
system's alternatives point at), the library files actually loaded into this process and,
for OpenBLAS, the core it picked on this CPU. A ratio ours / twin measures the trainers
only when these figures are sane."""
from __future__ import annotations

import ctypes
import re
import time

# harness/env/baseline_probe.h's ProbeShape: on a GPU, sizes where the library's time, not
# launch and synchronisation latency, is measured.
GEMM_N = 1024
STREAM_MIB = 64            # per array
GEMM_N_CUDA = 8192
STREAM_MIB_CUDA = 512
MIN_REPS, MAX_REPS, MIN_SECONDS = 3, 20, 0.2

_BLAS_NAMES = re.compile(r"(openblas|mkl|blas|blis|lapack|dnnl|mkldnn)", re.I)
# Loaded, but not torch's CPU math: numpy's own OpenBLAS, the CUDA libraries.
_NOT_TORCH_CPU = re.compile(r"(numpy\.libs|cublas|/cuda)", re.I)


def _best_rate(call, sync, work):
    call()
    sync()
    best, spent, r = 0.0, 0.0, 0
    while r < MAX_REPS and (r < MIN_REPS or spent < MIN_SECONDS):
        t0 = time.perf_counter()
        call()
        sync()
        dt = time.perf_counter() - t0
        spent += dt
        r += 1
        if dt > 0:
            best = max(best, work / dt)
    return best


def _loaded_math_libraries():
    """[{path, core?}]: shared objects mapped into this process whose names look like a
    BLAS/LAPACK/oneDNN, but numpy's own and CUDA's; an OpenBLAS (whatever its file is
    called: Debian's alternatives name it libblas.so.3) answers openblas_get_corename."""
    seen, out = set(), []
    try:
        with open("/proc/self/maps", "r", encoding="utf-8", errors="replace") as f:
            for line in f:
                parts = line.split()
                if len(parts) < 6 or ".so" not in parts[-1]:
                    continue
                path = parts[-1]
                name = path.rsplit("/", 1)[-1]
                if path in seen or not _BLAS_NAMES.search(name) or _NOT_TORCH_CPU.search(path):
                    continue
                seen.add(path)
                entry = {"path": path}
                try:
                    lib = ctypes.CDLL(path)
                    lib.openblas_get_corename.restype = ctypes.c_char_p
                    entry["core"] = lib.openblas_get_corename().decode()
                except (OSError, AttributeError):
                    pass
                out.append(entry)
    except OSError:
        pass
    return out


def math_backends(torch):
    """What this torch computes with on the CPU, and a one-line summary."""
    config = torch.__config__.show()

    def find(pattern):
        m = re.search(pattern, config)
        return m.group(1).strip() if m else None

    info = {
        "blas_info": find(r"BLAS_INFO=([^,\s]+)"),
        "mkl": find(r"Math Kernel Library Version ([^\n]+?)(?:-Product|\n)") if
        torch.backends.mkl.is_available() else None,
        "onednn": find(r"MKL-DNN (v[0-9.]+)") if torch.backends.mkldnn.is_available() else None,
        "cpu_capability": None,
        "loaded": _loaded_math_libraries(),
    }
    cap = getattr(getattr(torch.backends, "cpu", None), "get_cpu_capability", None)
    if cap is not None:
        try:
            info["cpu_capability"] = cap()
        except Exception:  # noqa: BLE001 -- a feature test, not a failure
            pass
    blas = info["blas_info"] or "?"
    if blas == "mkl" and info["mkl"]:
        blas = f"MKL {info['mkl']}"
    openblas = [e for e in info["loaded"] if "core" in e]
    if openblas:
        blas = f"OpenBLAS (core {openblas[0]['core']})"
    elif any("libblas" in e["path"] for e in info["loaded"]):
        # A libblas that is not OpenBLAS: the reference (netlib) BLAS of Debian's
        # alternatives, whatever the folder is called.
        blas = "the reference BLAS (" + next(e["path"] for e in info["loaded"]
                                             if "libblas" in e["path"]) + ")"
    parts = [f"BLAS {blas}"]
    if info["onednn"]:
        parts.append(f"oneDNN {info['onednn']}")
    if info["cpu_capability"]:
        parts.append(f"CPU capability {info['cpu_capability']}")
    info["summary"] = "torch " + torch.__version__ + ": " + ", ".join(parts)
    return info


def run_probe(threads, device, torch):
    """The probe object (rows + math), as harness/env/baseline_probe.h records it."""
    dev = torch.device(device)
    cuda = device == "cuda"
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    n = GEMM_N_CUDA if cuda else GEMM_N
    ns = (STREAM_MIB_CUDA if cuda else STREAM_MIB) * 1024 * 1024 // 4
    gen = torch.arange(n * n, dtype=torch.float32, device=dev).remainder_(17).sub_(8).div_(16)
    a32 = gen.reshape(n, n)
    b32 = gen.roll(1).reshape(n, n)
    c32 = torch.empty(n, n, device=dev)
    a16, b16 = a32.bfloat16(), b32.bfloat16()
    c16 = torch.empty(n, n, dtype=torch.bfloat16, device=dev)
    x = torch.arange(ns, dtype=torch.float32, device=dev).remainder_(17).sub_(8).div_(16)
    y = torch.empty_like(x)
    flops = 2.0 * n * n * n
    rows = []
    counts = [None] if cuda else ([1] if threads <= 1 else [1, threads])
    before = torch.get_num_threads()
    for t in counts:
        if t is not None:
            torch.set_num_threads(t)
        rows.append({
            "threads": t,
            "gemm_fp32_gflops": _best_rate(lambda: torch.mm(a32, b32, out=c32), sync, flops) * 1e-9,
            "gemm_bf16_gflops": _best_rate(lambda: torch.mm(a16, b16, out=c16), sync, flops) * 1e-9,
            "stream_gbs": _best_rate(lambda: torch.clamp(x, min=0.0, out=y), sync,
                                     2.0 * 4.0 * ns) * 1e-9,
        })
    torch.set_num_threads(before)
    math = math_backends(torch)
    if cuda:
        math["summary"] = (f"torch {torch.__version__} on {torch.cuda.get_device_name(0)} (CUDA "
                           f"{torch.version.cuda}, TF32 "
                           f"{'on' if torch.backends.cuda.matmul.allow_tf32 else 'off'})")
    return {"rows": rows, "math": math}
