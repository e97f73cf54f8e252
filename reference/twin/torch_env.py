"""torch feature tests and the process-wide switches: version, autocast, TF32,
determinism, the device's name."""
from __future__ import annotations

import contextlib
import inspect
import platform
import re

from .common import Unavailable, log, one_line


def torch_version_tuple(torch):
    m = re.match(r"(\d+)\.(\d+)", torch.__version__)
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


def has_kwarg(fn, name):
    try:
        return name in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


def autocast_factory(device, dtype, torch):
    """A zero-arg callable returning the forward+loss context for the dtype."""
    if dtype == "fp32":
        return contextlib.nullcontext
    if not hasattr(torch, "autocast"):
        raise Unavailable(f"bf16 needs torch.autocast (torch>=1.10), found {torch.__version__}")
    if device == "cuda":
        sup = getattr(torch.cuda, "is_bf16_supported", None)
        if sup is not None and not sup():
            raise Unavailable(f"bf16 is not supported on {torch.cuda.get_device_name(0)}")
    try:
        with torch.autocast(device_type=device, dtype=torch.bfloat16):
            pass
    except Exception as e:  # older torch: CPU autocast or bf16 missing
        raise Unavailable(f"torch.autocast({device}, bfloat16) is not available in torch "
                          f"{torch.__version__}: {one_line(e)}")
    return lambda: torch.autocast(device_type=device, dtype=torch.bfloat16)


def set_tf32(device, torch):
    """TF32 through the legacy switches only (allow_tf32 + set_float32_matmul_precision).
    torch>=2.9 deprecates them in favour of *.fp32_precision, but it refuses a mix of the
    two APIs and inductor still reads the legacy getters, so one consistent (legacy) set
    is the choice that works from 1.13 to 2.9+ (a deprecation warning goes to stderr)."""
    if device != "cuda":
        return False       # TF32 is a tensor-core format; nothing to switch on a CPU
    try:
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    except Exception as e:
        log(f"warning: could not set allow_tf32: {one_line(e)}")
    if hasattr(torch, "set_float32_matmul_precision"):
        torch.set_float32_matmul_precision("high")
    return True


def set_deterministic(on, torch):
    """use_deterministic_algorithms where it does not hurt: eager mode only by default
    (inductor/cudagraph trees are left alone). warn_only so an op without a deterministic
    implementation warns instead of failing; fill_uninitialized_memory (torch>=2.1) off,
    since filling every torch.empty would cost time that is not the model's."""
    if not on:
        return False
    try:
        if has_kwarg(torch.use_deterministic_algorithms, "warn_only"):
            torch.use_deterministic_algorithms(True, warn_only=True)
        else:
            torch.use_deterministic_algorithms(True)
    except Exception as e:
        log(f"warning: use_deterministic_algorithms failed: {one_line(e)}")
        return False
    det = getattr(getattr(torch, "utils", None), "deterministic", None)
    if det is not None and hasattr(det, "fill_uninitialized_memory"):
        det.fill_uninitialized_memory = False
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False
    return True


def cpu_name():
    try:
        with open("/proc/cpuinfo", "r", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or None


def select_device(args, result, torch):
    """The device to run on; fills device, device_name, cudnn_version. Unavailable when
    --device cuda has no CUDA."""
    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    result["device"] = device
    if device == "cuda":
        if not torch.cuda.is_available():
            built = (f"built for CUDA {torch.version.cuda}" if torch.version.cuda
                     else "a CPU-only build")
            raise Unavailable(f"--device cuda but torch.cuda.is_available() is False "
                              f"(torch {torch.__version__}, {built})")
        result["device_name"] = torch.cuda.get_device_name(0)
        result["cudnn_version"] = torch.backends.cudnn.version()
    else:
        result["device_name"] = cpu_name()
    return device
