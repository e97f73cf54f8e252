#!/usr/bin/env python3
"""The PyTorch twin of noeira-bench (DESIGN.md section 4).

Reads the same recipe (models/recipes/<model>.json) and the same data files as the C++
trainer, keeps the whole data set resident on the device, draws initial weights and the
per-epoch batch order from the same Philox4x32-10 (reference/philox.py), trains, times
every step and prints exactly ONE JSON object on stdout. Everything else (logs, warnings,
tracebacks, anything a library prints, even from C code) goes to stderr.

See reference/README.md for the CLI and the output fields. Works with torch 1.13 (CPU or
CUDA) and torch 2.x; every 2.x-only API is feature-tested before use.
"""
from __future__ import annotations

import argparse
import contextlib
import gzip
import inspect
import json
import math
import os
import platform
import re
import struct
import sys
import time
import traceback
import zlib

SCHEMA = "noeira-twin/1"
HERE = os.path.dirname(os.path.abspath(__file__))

# Filled as soon as we know them, so even an error/unavailable row says what ran.
_REAL_STDOUT = None


# --------------------------------------------------------------------------- output

def _log(msg: str) -> None:
    print(f"[twin] {msg}", file=sys.stderr, flush=True)


def _json_safe(obj):
    """NaN/inf -> None, numpy/torch scalars -> Python, recursively."""
    if isinstance(obj, bool) or obj is None or isinstance(obj, str):
        return obj
    if isinstance(obj, int):
        return obj
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {str(k): _json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_json_safe(v) for v in obj]
    if hasattr(obj, "item"):          # numpy / torch scalar
        try:
            return _json_safe(obj.item())
        except Exception:
            pass
    if hasattr(obj, "tolist"):
        return _json_safe(obj.tolist())
    return str(obj)


def _redirect_stdout_to_stderr() -> None:
    """Keep fd 1 for our one JSON line; point everything else (Python and C) at stderr."""
    global _REAL_STDOUT
    if _REAL_STDOUT is not None:
        return
    try:
        sys.stdout.flush()
        saved = os.dup(1)
        os.dup2(2, 1)
        _REAL_STDOUT = os.fdopen(saved, "w", encoding="utf-8")
    except OSError:
        _REAL_STDOUT = sys.__stdout__
    sys.stdout = sys.stderr


def _emit(obj) -> None:
    out = _REAL_STDOUT if _REAL_STDOUT is not None else sys.stdout
    out.write(json.dumps(_json_safe(obj), allow_nan=False, separators=(",", ":")) + "\n")
    out.flush()


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


class TwinError(Exception):
    """A clear, expected failure (bad recipe, missing file, bad checkpoint ...)."""


class Unavailable(Exception):
    """The installed torch / machine cannot run the requested variant (not an error)."""


# --------------------------------------------------------------------------- CLI

def parse_args(argv):
    ap = argparse.ArgumentParser(
        prog="torch_nn_reference.py",
        description="PyTorch twin of noeira-bench: trains a recipe, prints one JSON object.")
    ap.add_argument("--recipe", required=True, help="models/recipes/<model>.json")
    ap.add_argument("--data-dir", default=None,
                    help="directory holding mnist/ and fashion-mnist/ (default: $NOEIRA_DATA "
                         "or ~/.cache/noeira); fashion-mnist also falls back to "
                         "/usr/share/datasets/fashion-mnist")
    ap.add_argument("--dataset", default=None, choices=sorted(DATASETS),
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
                    help="parity mode: start from the 'param' tensors of this noeira checkpoint")
    ap.add_argument("--eval-batch", type=int, default=1000)
    ap.add_argument("--deterministic", default="auto", choices=["auto", "on", "off"],
                    help="torch.use_deterministic_algorithms: auto = on in eager mode, "
                         "off in compiled/graphs")
    def _error(message):
        raise TwinError(f"usage: {message} (see --help)")
    ap.error = _error
    a = ap.parse_args(argv)
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
    return a


# --------------------------------------------------------------------------- recipe

def _req(d, key, what, typ):
    if key not in d:
        raise TwinError(f"recipe: missing '{key}' in {what}")
    v = d[key]
    if not isinstance(v, typ) or (isinstance(v, bool) and typ is not bool):
        raise TwinError(f"recipe: '{key}' in {what} has the wrong type ({type(v).__name__})")
    return v


def load_recipe(path):
    try:
        with open(path, "r", encoding="utf-8") as f:
            r = json.load(f)
    except FileNotFoundError:
        raise TwinError(f"recipe file not found: {path}")
    except json.JSONDecodeError as e:
        raise TwinError(f"recipe {path} is not valid JSON: {e}")
    if not isinstance(r, dict):
        raise TwinError(f"recipe {path}: top level must be an object")
    _req(r, "layers", "recipe", list)
    _req(r, "input_shape", "recipe", list)
    _req(r, "batch", "recipe", int)
    _req(r, "epochs", "recipe", int)
    ds = _req(r, "dataset", "recipe", dict)
    _req(ds, "name", "dataset", str)
    opt = _req(r, "optimizer", "recipe", dict)
    _req(opt, "type", "optimizer", str)
    if r["batch"] < 1:
        raise TwinError("recipe: batch must be >= 1")
    if not r["layers"]:
        raise TwinError("recipe: 'layers' is empty")
    return r


def _fnv1a64(data: bytes) -> str:
    h = 0xCBF29CE484222325
    for b in data:
        h ^= b
        h = (h * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


def recipe_hash(recipe) -> str:
    """Best-effort copy of the C++ recipe_hash (FNV-1a 64 of the canonical JSON dump)."""
    canon = json.dumps(recipe, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return _fnv1a64(canon.encode("utf-8"))


# --------------------------------------------------------------------------- data

IDX_FILES = {
    "train_images": "train-images-idx3-ubyte.gz",
    "train_labels": "train-labels-idx1-ubyte.gz",
    "test_images": "t10k-images-idx3-ubyte.gz",
    "test_labels": "t10k-labels-idx1-ubyte.gz",
}
DATASETS = {
    "mnist": {"subdir": "mnist", "fallbacks": []},
    "fashion-mnist": {"subdir": "fashion-mnist",
                      "fallbacks": ["/usr/share/datasets/fashion-mnist"]},
}


def _read_idx_gz(path, np, want_ndim):
    try:
        with gzip.open(path, "rb") as f:
            raw = f.read()
    except (OSError, EOFError) as e:
        raise TwinError(f"cannot read {path}: {e} (corrupt or truncated gzip?)")
    if len(raw) < 4:
        raise TwinError(f"{path}: too short for an IDX header")
    zero, dtype_code, ndim = raw[0] << 8 | raw[1], raw[2], raw[3]
    if zero != 0 or dtype_code != 0x08 or ndim != want_ndim:
        raise TwinError(f"{path}: not a uint8 IDX file with {want_ndim} dims "
                        f"(magic {raw[:4].hex()})")
    hdr = 4 + 4 * ndim
    if len(raw) < hdr:
        raise TwinError(f"{path}: truncated IDX header")
    dims = struct.unpack(">" + "I" * ndim, raw[4:hdr])
    n = 1
    for d in dims:
        n *= d
    if len(raw) - hdr != n:
        raise TwinError(f"{path}: {len(raw) - hdr} data bytes, header says {n} ({dims})")
    return np.frombuffer(raw, dtype=np.uint8, offset=hdr).reshape(dims)


def find_dataset_dir(name, data_dir):
    spec = DATASETS[name]
    tried = []
    cands = [os.path.join(data_dir, spec["subdir"])] + list(spec["fallbacks"])
    for c in cands:
        tried.append(c)
        if all(os.path.isfile(os.path.join(c, f)) for f in IDX_FILES.values()):
            return c
    raise TwinError(f"dataset '{name}': the four IDX .gz files were not found in "
                    f"{' or '.join(tried)}; pass --data-dir DIR (holding {spec['subdir']}/)")


def load_dataset(name, data_dir, mean, std, np):
    """uint8 IDX -> float32 x = (u8/255 - mean)/std (float32 arithmetic, as the C++ does)."""
    d = find_dataset_dir(name, data_dir)
    tri = _read_idx_gz(os.path.join(d, IDX_FILES["train_images"]), np, 3)
    trl = _read_idx_gz(os.path.join(d, IDX_FILES["train_labels"]), np, 1)
    tei = _read_idx_gz(os.path.join(d, IDX_FILES["test_images"]), np, 3)
    tel = _read_idx_gz(os.path.join(d, IDX_FILES["test_labels"]), np, 1)
    if tri.shape[0] != trl.shape[0] or tei.shape[0] != tel.shape[0]:
        raise TwinError(f"dataset '{name}' in {d}: image and label counts differ")
    m = np.float32(mean)
    s = np.float32(std)

    def norm(u8):
        x = u8.reshape(u8.shape[0], -1).astype(np.float32) / np.float32(255.0)
        return (x - m) / s

    return {"dir": d, "train_x": norm(tri), "train_y": trl.astype(np.int64),
            "test_x": norm(tei), "test_y": tel.astype(np.int64)}


# --------------------------------------------------------------------------- model

class LayerBuild:
    """What a layer builder returns: modules to append, output shape, and one init rule
    per parameter it registers, in registration order (param index = Philox stream)."""

    def __init__(self, modules, out_shape, params):
        self.modules = modules          # list of nn.Module, appended in order
        self.out_shape = out_shape      # per-sample shape after this layer
        self.params = params            # list of (nn.Parameter, init dict)


def _activation(name, nn, where):
    if name is None:
        return None
    if name == "relu":
        return nn.ReLU()
    if name == "gelu":            # tanh approximation, as kernels/common/math.h computes it
        try:
            return nn.GELU(approximate="tanh")
        except TypeError:
            raise Unavailable("gelu needs torch>=1.12 (nn.GELU(approximate='tanh'))")
    raise TwinError(f"recipe: {where}: unknown act '{name}' (relu, gelu)")


def build_linear(spec, in_shape, idx, torch, nn):
    out = spec.get("out")
    if not isinstance(out, int) or isinstance(out, bool) or out < 1:
        raise TwinError(f"recipe: layers[{idx}] (linear): 'out' must be a positive integer")
    if len(in_shape) != 1:
        raise TwinError(f"recipe: layers[{idx}] (linear) needs a flat input, got {in_shape}")
    fan_in = int(in_shape[0])
    lin = nn.Linear(fan_in, out, bias=bool(spec.get("bias", True)))
    params = [(lin.weight, {"kind": "weight", "fan_in": fan_in, "fan_out": out})]
    if lin.bias is not None:
        params.append((lin.bias, {"kind": "zeros"}))
    mods = [lin]
    act = _activation(spec.get("act"), nn, f"layers[{idx}]")
    if act is not None:
        mods.append(act)
    return LayerBuild(mods, [out], params)


# One builder per layer type; add conv2d, attention, ... here.
LAYER_BUILDERS = {
    "linear": build_linear,
}


def build_model(recipe, torch, nn):
    shape = [int(s) for s in recipe["input_shape"]]
    mods, params = [], []
    for i, spec in enumerate(recipe["layers"]):
        if not isinstance(spec, dict) or "type" not in spec:
            raise TwinError(f"recipe: layers[{i}] must be an object with a 'type'")
        builder = LAYER_BUILDERS.get(spec["type"])
        if builder is None:
            raise TwinError(f"recipe: layers[{i}]: the twin has no builder for layer type "
                            f"'{spec['type']}' (known: {', '.join(sorted(LAYER_BUILDERS))})")
        b = builder(spec, shape, i, torch, nn)
        mods.extend(b.modules)
        params.extend(b.params)
        shape = b.out_shape
    model = nn.Sequential(*mods)
    # Registration order must be model.parameters() order: the Philox stream and the
    # checkpoint's param list both rely on it.
    listed = list(model.parameters())
    if len(listed) != len(params) or any(a is not b for a, (b, _) in zip(listed, params)):
        raise TwinError("internal: builder parameter order differs from model.parameters()")
    return model, params, shape


def init_params_philox(params, init, seed, torch, philox):
    if init not in ("kaiming_uniform", "xavier_uniform"):
        raise TwinError(f"recipe: init '{init}' is not supported by the twin "
                        "(kaiming_uniform, xavier_uniform)")
    with torch.no_grad():
        for p_index, (p, rule) in enumerate(params):
            shape = tuple(p.shape)
            if rule["kind"] == "zeros":
                p.zero_()
                continue
            if init == "kaiming_uniform":
                w = philox.kaiming_uniform(seed, p_index, shape, rule["fan_in"])
            else:
                w = philox.xavier_uniform(seed, p_index, shape, rule["fan_in"], rule["fan_out"])
            p.copy_(torch.from_numpy(w))


# --------------------------------------------------------------------------- checkpoint

def load_checkpoint_params(path, params, recipe, torch, np):
    """Copy the 'param' tensors of a noeira checkpoint (docs/checkpoint-format.md) into
    params, in file order. Checks magic, version, sizes, CRC, dtypes and shapes."""
    try:
        with open(path, "rb") as f:
            blob = f.read()
    except OSError as e:
        raise TwinError(f"cannot read checkpoint {path}: {e.strerror or e}")
    if len(blob) < 28:
        raise TwinError(f"checkpoint {path}: file too short ({len(blob)} bytes)")
    if blob[:8] != b"NOEIRACK":
        raise TwinError(f"checkpoint {path}: bad magic {blob[:8]!r} (want b'NOEIRACK')")
    version, _reserved, hlen = struct.unpack_from("<IIQ", blob, 8)
    if version != 1:
        raise TwinError(f"checkpoint {path}: format version {version}, the twin reads 1")
    crc_stored = struct.unpack_from("<I", blob, len(blob) - 4)[0]
    crc = zlib.crc32(blob[:-4]) & 0xFFFFFFFF
    if crc != crc_stored:
        raise TwinError(f"checkpoint {path}: CRC mismatch (stored {crc_stored:08x}, "
                        f"computed {crc:08x}); the file is corrupt or truncated")
    if 24 + hlen > len(blob) - 4:
        raise TwinError(f"checkpoint {path}: header length {hlen} exceeds the file")
    try:
        header = json.loads(blob[24:24 + hlen].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise TwinError(f"checkpoint {path}: header is not UTF-8 JSON: {e}")
    data = memoryview(blob)[24 + hlen:len(blob) - 4]
    tensors = header.get("tensors")
    if not isinstance(tensors, list):
        raise TwinError(f"checkpoint {path}: header has no 'tensors' list")
    total = 0
    for t in tensors:
        nb = int(t.get("nbytes", -1))
        off = int(t.get("offset", -1))
        if nb < 0 or off < 0 or off + nb > len(data):
            raise TwinError(f"checkpoint {path}: tensor '{t.get('name')}' lies outside "
                            f"the data section ({off}+{nb} > {len(data)})")
        total += nb
    if total != len(data):
        raise TwinError(f"checkpoint {path}: data section is {len(data)} bytes, tensors "
                        f"sum to {total}")
    ptensors = [t for t in tensors if t.get("group") == "param"]
    if len(ptensors) != len(params):
        raise TwinError(f"checkpoint {path}: {len(ptensors)} param tensors, the recipe's "
                        f"model has {len(params)}")
    if header.get("model") not in (None, recipe.get("name")):
        _log(f"warning: checkpoint model '{header.get('model')}' != recipe name "
             f"'{recipe.get('name')}'")
    rh = header.get("recipe_hash")
    ours = recipe_hash(recipe)
    if rh is not None and rh != ours:
        _log(f"warning: checkpoint recipe_hash {rh} != twin's {ours} (the twin's canonical "
             "dump may differ from the C++ one; shapes are checked regardless)")
    if int(header.get("step", 0) or 0) != 0:
        _log(f"warning: checkpoint is at step {header.get('step')}; the twin loads the "
             "parameters only (fresh optimizer state, epoch 0 batch order)")
    with torch.no_grad():
        for i, (t, (p, _)) in enumerate(zip(ptensors, params)):
            name = t.get("name", f"#{i}")
            if t.get("dtype") != "f32":
                raise TwinError(f"checkpoint {path}: tensor '{name}' has dtype "
                                f"{t.get('dtype')}, want f32")
            shape = [int(s) for s in t.get("shape", [])]
            if shape != list(p.shape):
                raise TwinError(f"checkpoint {path}: tensor '{name}' (param {i}) has shape "
                                f"{shape}, the model's parameter {i} is {list(p.shape)}")
            n = 1
            for s in shape:
                n *= s
            if int(t["nbytes"]) != 4 * n:
                raise TwinError(f"checkpoint {path}: tensor '{name}' nbytes {t['nbytes']} "
                                f"!= 4*{n}")
            off = int(t["offset"])
            arr = np.frombuffer(data[off:off + 4 * n], dtype="<f4").astype(np.float32)
            p.copy_(torch.from_numpy(arr.reshape(shape)))
    return {"path": os.path.abspath(path), "step": header.get("step"),
            "epoch": header.get("epoch"), "seed": header.get("seed"),
            "recipe_hash": rh, "recipe_hash_matches": (rh == ours) if rh else None}


# --------------------------------------------------------------------------- torch glue

def _torch_version_tuple(torch):
    m = re.match(r"(\d+)\.(\d+)", torch.__version__)
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


def _has_kwarg(fn, name):
    try:
        return name in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


# torch.optim's fused kernels: CUDA since torch 2.0, CPU since torch 2.4 (Adam, AdamW, SGD).
FUSED_MIN_TORCH = {"cuda": (2, 0), "cpu": (2, 4)}


def fused_unavailable_reason(cls, device, torch):
    """None when fused=True is worth trying for cls on device, else why not (one line)."""
    need = FUSED_MIN_TORCH.get(device)
    have = _torch_version_tuple(torch)
    if need is None:
        return f"no fused {cls.__name__} on {device}"
    if have < need:
        return (f"fused {cls.__name__} on {device} needs torch>={need[0]}.{need[1]}, "
                f"found {torch.__version__}")
    if not _has_kwarg(cls.__init__, "fused"):
        return f"{cls.__name__} of torch {torch.__version__} has no fused= argument"
    return None


def make_optimizer(recipe, params, device, torch):
    """Optimizer from the recipe; fused (torch>=2.0 on CUDA, >=2.4 on CPU) > foreach >
    for-loop. Returns (optimizer, impl, why_not_fused or None)."""
    o = recipe["optimizer"]
    typ = o["type"].lower()
    lr = float(o.get("lr", 1e-3))
    wd = float(o.get("weight_decay", 0.0))
    if typ in ("adam", "adamw"):
        cls = torch.optim.Adam if typ == "adam" else torch.optim.AdamW
        betas = tuple(float(b) for b in o.get("betas", [0.9, 0.999]))
        if len(betas) != 2:
            raise TwinError("recipe: optimizer.betas must have two values")
        kw = {"lr": lr, "betas": betas, "eps": float(o.get("eps", 1e-8)), "weight_decay": wd}
    elif typ == "sgd":
        cls = torch.optim.SGD
        kw = {"lr": lr, "momentum": float(o.get("momentum", 0.0)), "weight_decay": wd}
        if o.get("nesterov"):
            kw["nesterov"] = True
    else:
        raise TwinError(f"recipe: optimizer type '{o['type']}' unknown (adam, adamw, sgd)")
    plist = list(params)
    no_fused = fused_unavailable_reason(cls, device, torch)
    if no_fused is None:
        try:
            return cls(plist, fused=True, **kw), "fused", None
        except (RuntimeError, TypeError, ValueError) as e:
            no_fused = f"fused {cls.__name__} refused: {_one_line(e)}"
            _log(f"{no_fused}; trying foreach")
    if _has_kwarg(cls.__init__, "foreach"):
        try:
            return cls(plist, foreach=True, **kw), "foreach", no_fused
        except (RuntimeError, TypeError, ValueError) as e:
            _log(f"foreach {cls.__name__} refused ({_one_line(e)}); using the for-loop one")
    return cls(plist, **kw), "for-loop", no_fused


def make_loss(recipe, num_classes, torch, F):
    name = recipe.get("loss", "softmax_cross_entropy")
    if name == "softmax_cross_entropy":
        def ce(out, y, reduction="mean"):
            return F.cross_entropy(out.float(), y, reduction=reduction)
        return ce
    if name == "mse":
        # Classification data: targets are one-hot rows; mean over all elements
        # (reduction='sum' divided by the batch gives the per-sample sum for eval).
        def mse(out, y, reduction="mean"):
            t = F.one_hot(y, num_classes).to(torch.float32)
            if reduction == "sum":
                return F.mse_loss(out.float(), t, reduction="sum") / num_classes
            return F.mse_loss(out.float(), t, reduction=reduction)
        return mse
    raise TwinError(f"recipe: loss '{name}' unknown (softmax_cross_entropy, mse)")


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
                          f"{torch.__version__}: {_one_line(e)}")
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
        _log(f"warning: could not set allow_tf32: {_one_line(e)}")
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
        if _has_kwarg(torch.use_deterministic_algorithms, "warn_only"):
            torch.use_deterministic_algorithms(True, warn_only=True)
        else:
            torch.use_deterministic_algorithms(True)
    except Exception as e:
        _log(f"warning: use_deterministic_algorithms failed: {_one_line(e)}")
        return False
    det = getattr(getattr(torch, "utils", None), "deterministic", None)
    if det is not None and hasattr(det, "fill_uninitialized_memory"):
        det.fill_uninitialized_memory = False
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False
    return True


def _cpu_name():
    try:
        with open("/proc/cpuinfo", "r", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or None


# --------------------------------------------------------------------------- run

# Every row (available or not) carries every key, in this order; unknown values are null.
RESULT_KEYS = [
    "schema", "ok", "available", "unavailable_reason",
    "torch_version", "python_version", "cuda_version", "cudnn_version",
    "recipe", "dataset", "n_train", "n_test",
    "device", "device_name", "mode", "dtype", "threads", "tf32", "deterministic",
    "optimizer", "adam_impl", "graphs_impl", "init", "init_checkpoint", "num_params",
    "seed", "epochs", "epochs_run", "batch", "drop_last", "steps_per_epoch", "steps", "warmup",
    "timer", "step_times_ms", "median_step_ms", "wall_ms_per_step", "compile_seconds",
    "losses", "train_loss_last_epoch", "test_top1", "test_loss", "eval_dtype",
]

def run(args, result):
    recipe = load_recipe(args.recipe)
    result["recipe"] = recipe.get("name", os.path.splitext(os.path.basename(args.recipe))[0])

    try:
        import torch
        import torch.nn as nn
        import torch.nn.functional as F
    except Exception as e:
        raise TwinError(f"torch is not importable: {_one_line(e)} (python {sys.executable})")
    try:
        import numpy as np
    except Exception as e:
        raise TwinError(f"numpy is not importable: {_one_line(e)} (python {sys.executable})")
    sys.path.insert(0, HERE)
    import philox

    result["torch_version"] = torch.__version__
    result["cuda_version"] = getattr(torch.version, "cuda", None)

    if args.threads is not None:
        torch.set_num_threads(args.threads)
    result["threads"] = torch.get_num_threads()

    # ---- device / mode / dtype availability (available:false, exit 0)
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
        result["device_name"] = _cpu_name()

    if args.mode in ("compiled", "graphs"):
        if _torch_version_tuple(torch) < (2, 0) or not hasattr(torch, "compile"):
            raise Unavailable(f"torch.compile needs torch>=2.0, found {torch.__version__}")
        if args.mode == "graphs" and device != "cuda":
            raise Unavailable("CUDA graphs need a CUDA device")
    autocast = autocast_factory(device, args.dtype, torch)

    result["tf32"] = set_tf32(device, torch)
    result["deterministic"] = set_deterministic(args.det_on, torch)
    torch.manual_seed(args.seed)

    # ---- data, resident on the device
    ds_name = args.dataset or recipe["dataset"]["name"]
    if ds_name not in DATASETS:
        raise TwinError(f"dataset '{ds_name}' is not supported by the twin "
                        f"({', '.join(sorted(DATASETS))})")
    norm = recipe["dataset"].get("normalize", {"mean": 0.0, "std": 1.0})
    data_dir = args.data_dir or os.environ.get("NOEIRA_DATA") or os.path.join(
        os.path.expanduser("~"), ".cache", "noeira")
    t0 = time.perf_counter()
    d = load_dataset(ds_name, data_dir, float(norm["mean"]), float(norm["std"]), np)
    in_shape = [int(s) for s in recipe["input_shape"]]
    feat = 1
    for s in in_shape:
        feat *= s
    if d["train_x"].shape[1] != feat:
        raise TwinError(f"recipe input_shape {in_shape} ({feat} values) does not match "
                        f"{ds_name} samples ({d['train_x'].shape[1]} values)")
    n_train, n_test = d["train_x"].shape[0], d["test_x"].shape[0]
    dev = torch.device(device)
    train_x = torch.from_numpy(d["train_x"]).reshape([n_train] + in_shape).to(dev)
    train_y = torch.from_numpy(d["train_y"]).to(dev)
    test_x = torch.from_numpy(d["test_x"]).reshape([n_test] + in_shape).to(dev)
    test_y = torch.from_numpy(d["test_y"]).to(dev)
    _log(f"{ds_name} from {d['dir']}: {n_train} train / {n_test} test, resident on "
         f"{device} ({time.perf_counter() - t0:.2f} s)")
    result.update({"dataset": ds_name, "n_train": n_train, "n_test": n_test})

    num_classes = int(recipe.get("num_classes", 10))
    if int(d["train_y"].max()) >= num_classes:
        raise TwinError(f"labels of {ds_name} exceed num_classes={num_classes}")

    # ---- model + initial weights
    model, params, out_shape = build_model(recipe, torch, nn)
    if out_shape != [num_classes]:
        raise TwinError(f"recipe: the last layer outputs {out_shape}, "
                        f"num_classes is {num_classes}")
    if args.init_checkpoint:
        result["init"] = "checkpoint"
        result["init_checkpoint"] = load_checkpoint_params(args.init_checkpoint, params,
                                                           recipe, torch, np)
    else:
        result["init"] = "philox"
        init_params_philox(params, recipe.get("init", "kaiming_uniform"), args.seed,
                           torch, philox)
    model = model.to(dev)
    model.train()
    result["num_params"] = sum(p.numel() for p in model.parameters())

    optimizer, impl, no_fused = make_optimizer(recipe, list(model.parameters()), device, torch)
    result["optimizer"] = recipe["optimizer"]["type"].lower()
    result["adam_impl"] = impl
    if no_fused:
        _log(f"optimizer: {impl}, not fused: {no_fused}")
    loss_fn = make_loss(recipe, num_classes, torch, F)

    # ---- compiled variants
    fwd = model
    mark_step = None
    if args.mode == "compiled":
        try:
            fwd = torch.compile(model)
        except Exception as e:   # e.g. Dynamo unsupported on this Python
            raise Unavailable(f"torch.compile failed: {_one_line(e)}")
    elif args.mode == "graphs":
        try:
            fwd = torch.compile(model, mode="reduce-overhead")
        except Exception as e:
            raise Unavailable(f"torch.compile(mode='reduce-overhead') failed: {_one_line(e)}")
        result["graphs_impl"] = "torch.compile(mode='reduce-overhead')"
        comp = getattr(torch, "compiler", None)
        mark_step = getattr(comp, "cudagraph_mark_step_begin", None)

    # ---- schedule: per-epoch Philox order, computed up front, resident on the device
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
    orders_t = torch.from_numpy(orders).to(dev)
    batches = []   # (epoch, view into orders_t) -- views, no host work in the loop
    for e in range(epochs_run):
        for b in range(steps_per_epoch):
            if len(batches) == total:
                break
            batches.append((e, orders_t[e, b * B:min((b + 1) * B, n_train)]))
    result.update({"epochs": epochs, "epochs_run": epochs_run, "batch": B,
                   "steps_per_epoch": steps_per_epoch, "steps": total,
                   "warmup": args.warmup, "drop_last": drop_last})

    # Learning-rate schedule, as the C++ side computes it (kernels/common/math.h,
    # scheduled_lr): cosine from lr to 0 over this run's `total` steps, in double.
    schedule = recipe["optimizer"].get("schedule", "constant")
    if schedule not in ("constant", "cosine"):
        raise TwinError(f"recipe: optimizer.schedule '{schedule}' is not constant or cosine")
    base_lr = float(recipe["optimizer"].get("lr", 1e-3))

    def lr_at(i):  # i: 0-based step
        if schedule == "constant":
            return base_lr
        return base_lr * 0.5 * (1.0 + math.cos(3.141592653589793 * min(i, total) / total))

    result["lr_schedule"] = schedule

    def step(idx, i):
        if schedule != "constant":
            for g in optimizer.param_groups:
                g["lr"] = lr_at(i)
        x = train_x.index_select(0, idx)
        y = train_y.index_select(0, idx)
        optimizer.zero_grad(set_to_none=True)
        with autocast():
            out = fwd(x)
            loss = loss_fn(out, y)
        loss.backward()
        optimizer.step()
        return loss

    losses = torch.zeros(total, dtype=torch.float32, device=dev)
    cuda = device == "cuda"
    if cuda:
        ev_start = [torch.cuda.Event(enable_timing=True) for _ in range(total)]
        ev_end = [torch.cuda.Event(enable_timing=True) for _ in range(total)]
        torch.cuda.synchronize()
    host_ms = [0.0] * total
    compile_s = None
    _log(f"training: mode={args.mode} dtype={args.dtype} {total} steps "
         f"({steps_per_epoch}/epoch, batch {B}), warmup {args.warmup}, optimizer "
         f"{result['optimizer']} ({impl})")
    wall_t0 = None
    if args.warmup == 0:
        wall_t0 = time.perf_counter()
    for i, (_, idx) in enumerate(batches):
        if i == args.warmup and i > 0:
            if cuda:
                torch.cuda.synchronize()
            wall_t0 = time.perf_counter()
        if mark_step is not None:
            mark_step()
        t = time.perf_counter()
        if cuda:
            ev_start[i].record()
            loss = step(idx, i)
            ev_end[i].record()
        else:
            loss = step(idx, i)
            host_ms[i] = (time.perf_counter() - t) * 1e3
        losses[i].copy_(loss.detach())
        if i == 0 and args.mode != "eager":
            # The first call compiles. One sync here (inside the warm-up when warmup >= 1)
            # measures it on the host clock; event times of later steps are unaffected.
            if cuda:
                torch.cuda.synchronize()
            compile_s = time.perf_counter() - t
    if cuda:
        torch.cuda.synchronize()
    wall_t1 = time.perf_counter()
    if compile_s is not None:
        _log(f"compile: {compile_s:.1f} s (step 0, inside the warm-up)" if args.warmup >= 1
             else f"compile: {compile_s:.1f} s (step 0, timed: --warmup 0)")
    timed = total - args.warmup
    if cuda:
        step_ms = [ev_start[i].elapsed_time(ev_end[i]) for i in range(args.warmup, total)]
        result["timer"] = "event"
    else:
        step_ms = host_ms[args.warmup:]
        result["timer"] = "wall"
    result["step_times_ms"] = step_ms
    result["wall_ms_per_step"] = (wall_t1 - wall_t0) * 1e3 / timed
    result["compile_seconds"] = compile_s
    loss_list = losses.cpu().tolist()
    result["losses"] = loss_list
    last_e = batches[-1][0]
    last = [l for (e, _), l in zip(batches, loss_list) if e == last_e]
    result["train_loss_last_epoch"] = sum(last) / len(last)
    srt = sorted(step_ms)
    result["median_step_ms"] = (srt[(len(srt) - 1) // 2] + srt[len(srt) // 2]) / 2

    # ---- evaluation: eager module (shares the parameters), same dtype as training
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
    result["test_top1"] = 100.0 * int(correct.item()) / n_test
    result["test_loss"] = float(loss_sum.item()) / n_test
    result["eval_dtype"] = args.dtype
    _log(f"done: test top-1 {result['test_top1']:.2f}%  test loss {result['test_loss']:.4f}  "
         f"median step {result['median_step_ms']:.3f} ms")


def main(argv=None) -> int:
    try:
        args = parse_args(sys.argv[1:] if argv is None else argv)
    except TwinError as e:
        _log(str(e))
        _emit({"schema": SCHEMA, "ok": False, "error": _one_line(e)})
        return 1
    _redirect_stdout_to_stderr()
    args.det_on = args.deterministic == "on" or (args.deterministic == "auto"
                                                 and args.mode == "eager")
    if args.det_on:
        # cuBLAS needs this before its first handle for deterministic mode on CUDA.
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    result = {k: None for k in RESULT_KEYS}
    result.update({
        "schema": SCHEMA, "ok": True, "available": True,
        "python_version": platform.python_version(), "device": args.device,
        "mode": args.mode, "dtype": args.dtype, "threads": args.threads, "seed": args.seed,
    })
    try:
        run(args, result)
    except Unavailable as e:
        result["available"] = False
        result["unavailable_reason"] = _one_line(e)
        _log(f"unavailable: {result['unavailable_reason']}")
        _emit(result)
        return 0
    except TwinError as e:
        _log(f"error: {e}")
        _emit({"schema": SCHEMA, "ok": False, "error": _one_line(e)})
        return 1
    except Exception as e:  # noqa: BLE001  -- anything else is a one-line error too
        traceback.print_exc(file=sys.stderr)
        _emit({"schema": SCHEMA, "ok": False, "error": _one_line(f"{type(e).__name__}: {e}")})
        return 1
    _emit(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
