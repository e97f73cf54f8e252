"""Errors, logging and the one-JSON-object-on-stdout protocol (schema noeira-twin/1)."""
from __future__ import annotations

import json
import math
import os
import sys

SCHEMA = "noeira-twin/1"

# Sample shape (C, H, W) of every data set the twin reads (datasets/catalog.cpp).
SAMPLE_SHAPES = {"mnist": (1, 28, 28), "fashion-mnist": (1, 28, 28),
                 "cifar10": (3, 32, 32), "cifar10-subset": (3, 32, 32)}
# Token corpora (the gpt family; twin/text.py).
TEXT_DATASETS = ("tinyshakespeare",)
DATASETS = sorted(list(SAMPLE_SHAPES) + list(TEXT_DATASETS))

# The real stdout, once fd 1 has been pointed at stderr (redirect_stdout_to_stderr).
_REAL_STDOUT = None


class TwinError(Exception):
    """A clear, expected failure (bad recipe, missing file, bad checkpoint ...)."""


class Unavailable(Exception):
    """The installed torch / machine cannot run the requested variant (not an error)."""


# Ranks > 0 of a data-parallel run (twin/dist.py) keep quiet; they report only errors.
_LOG_QUIET = False


def set_log_quiet(quiet: bool) -> None:
    global _LOG_QUIET
    _LOG_QUIET = bool(quiet)


def log(msg: str) -> None:
    if not _LOG_QUIET:
        print(f"[twin] {msg}", file=sys.stderr, flush=True)


def one_line(text) -> str:
    return " ".join(str(text).split())


def json_safe(obj):
    """NaN/inf -> None, numpy/torch scalars -> Python, recursively."""
    if isinstance(obj, bool) or obj is None or isinstance(obj, str):
        return obj
    if isinstance(obj, int):
        return obj
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {str(k): json_safe(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [json_safe(v) for v in obj]
    if hasattr(obj, "item"):          # numpy / torch scalar
        try:
            return json_safe(obj.item())
        except Exception:
            pass
    if hasattr(obj, "tolist"):
        return json_safe(obj.tolist())
    return str(obj)


def redirect_stdout_to_stderr() -> None:
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


def emit(obj) -> None:
    out = _REAL_STDOUT if _REAL_STDOUT is not None else sys.stdout
    out.write(json.dumps(json_safe(obj), allow_nan=False, separators=(",", ":")) + "\n")
    out.flush()


def error_row(message) -> dict:
    return {"schema": SCHEMA, "ok": False, "error": one_line(message)}


def positive_int(value, what) -> int:
    """A JSON integer >= 1 (bools are not integers here)."""
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise TwinError(f"recipe: {what} must be a positive integer, got {value!r}")
    return value


def nonneg_int(value, what) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise TwinError(f"recipe: {what} must be an integer >= 0, got {value!r}")
    return value


def write_atomic(path, data: bytes) -> None:
    """Writes PATH.tmp.<pid>, then renames it over PATH: no reader sees a partial file;
    a TwinError naming PATH when that fails (the temporary file is removed)."""
    tmp = f"{path}.tmp.{os.getpid()}"
    try:
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except OSError as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise TwinError(f"cannot write {path}: {e.strerror or e}")


def cpu_load_snapshot() -> dict:
    """/proc/stat's aggregate cpu line and /proc/loadavg, as text, for the harness to parse
    (harness/env/cpu_load.h: steal time and load average over the timed loop). Empty
    strings where they cannot be read (not Linux)."""
    snap = {}
    for key, path in (("stat", "/proc/stat"), ("loadavg", "/proc/loadavg")):
        try:
            with open(path, encoding="ascii", errors="replace") as f:
                snap[key] = f.readline().strip()
        except OSError:
            snap[key] = ""
    return snap


def cpu_window(start: dict, end: dict) -> dict:
    """The reply's "cpu_window" from the snapshots at the start and the end of the timed loop."""
    return {"stat_start": start["stat"], "loadavg_start": start["loadavg"],
            "stat_end": end["stat"], "loadavg_end": end["loadavg"]}
