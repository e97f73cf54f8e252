"""Token corpora for the gpt family: TinyShakespeare, character level (nanoGPT's
shakespeare_char prepare.py).

  file        <dir>/tinyshakespeare/input.txt, for dir in --data-dir, $NOEIRA_DATA, the cache
              (data.data_dirs); sha256 pinned below (the 1,115,394-byte char-rnn copy)
  vocabulary  the sorted set of the file's bytes (= characters: the file is ASCII; 65), as
              datasets/tinyshakespeare.cpp: one token per byte
  ids         index of a character in the vocabulary (the C++ keeps them as int32; the twin
              as int64, which torch's embedding wants -- same values)
  split       train = the first int(n * 0.9) tokens (n * 0.9 in double, truncated:
              1,003,854), val = the rest (111,540)
  windows     training: kernels/common/batch_window.h (philox.batch_window_starts);
              validation: window k = val[k*T : k*T + T + 1], k < min(eval_windows, (n_val-1)//T)
"""
from __future__ import annotations

import hashlib
import os

import numpy as np

from .common import TwinError
from .data import data_dirs

TEXT_SETS = {
    "tinyshakespeare": {
        "rel": os.path.join("tinyshakespeare", "input.txt"),
        "bytes": 1115394,
        "sha256": "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed",
        "train_fraction": 0.9,
    },
}


def load_corpus(name, data_dir):
    """-> dict(dir, path, vocab (list of 1-char str), ids int64 array, n, n_train, n_val)."""
    spec = TEXT_SETS.get(name)
    if spec is None:
        raise TwinError(f"dataset '{name}' is not a token corpus the twin knows "
                        f"({', '.join(sorted(TEXT_SETS))})")
    looked = [os.path.join(d, spec["rel"]) for d in data_dirs(data_dir)]
    path = next((p for p in looked if os.path.isfile(p)), None)
    if path is None:
        raise TwinError(f"{spec['rel']} not found (looked in {', '.join(looked)}); run "
                        "noeira-bench once to download it, or point --data-dir or NOEIRA_DATA "
                        "at a directory holding tinyshakespeare/input.txt")
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        raise TwinError(f"cannot read {path}: {e.strerror or e}")
    got = hashlib.sha256(raw).hexdigest()
    if got != spec["sha256"]:
        what = (f"truncated ({len(raw)} bytes of {spec['bytes']})" if len(raw) < spec["bytes"]
                else f"corrupt or a different version ({len(raw)} bytes)")
        raise TwinError(f"{path} is {what}: sha256 {got}, expected {spec['sha256']}; "
                        "delete it and let noeira-bench download it again")
    data = np.frombuffer(raw, dtype=np.uint8)
    present = np.flatnonzero(np.bincount(data, minlength=256))   # sorted byte values
    lut = np.full(256, -1, dtype=np.int64)
    lut[present] = np.arange(present.size, dtype=np.int64)
    ids = lut[data]
    n = int(ids.size)
    n_train = int(n * spec["train_fraction"])
    return {"dir": os.path.dirname(os.path.dirname(path)), "path": path,
            "vocab": [chr(int(b)) for b in present], "ids": ids, "n": n,
            "n_train": n_train, "n_val": n - n_train}


def eval_window_count(n_val, context, cap):
    """kernels/common/batch_window.h eval_window_count: (n_val - 1) // T fixed windows,
    at most cap (0 = no cap)."""
    fit = (n_val - 1) // context if n_val > context else 0
    return cap if 0 < cap < fit else fit
