#!/usr/bin/env python3
"""The PyTorch twin of noeira-bench (DESIGN.md section 4) -- entry point.

Reads the same recipe (models/recipes/<model>.json) and the same data files as the C++
trainer, keeps the whole data set resident on the device, draws initial weights, the
per-epoch batch order, augmentation and dropout from the same Philox4x32-10
(reference/philox.py), trains, times every step and prints exactly ONE JSON object on
stdout. Everything else (logs, warnings, tracebacks, anything a library prints, even
from C code) goes to stderr.

The code lives in the package reference/twin/ (one module per job, see its __init__);
see reference/README.md for the CLI and the output fields. Works with torch 1.13 (CPU or
CUDA) and torch 2.x; every 2.x-only API is feature-tested before use.
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

if __name__ == "__main__":
    if HERE not in sys.path:
        sys.path.insert(0, HERE)
    try:
        from twin.cli import main
    except Exception as e:  # noqa: BLE001 -- a broken install is still one JSON error row
        msg = " ".join(f"the twin package reference/twin is not importable from {HERE}: "
                       f"{type(e).__name__}: {e}".split())
        print(f"[twin] error: {msg}", file=sys.stderr, flush=True)
        sys.stdout.write(json.dumps({"schema": "noeira-twin/1", "ok": False, "error": msg},
                                    separators=(",", ":")) + "\n")
        sys.exit(1)
    sys.exit(main())
