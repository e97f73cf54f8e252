"""Data sets, read from the same files as the C++ side (datasets/), normalised exactly as
models/recipe_data.cpp does: x = (float(u8) / 255.0f - mean[c]) / std[c], all float32.

Directories searched, in order (datasets/data_files.cpp data_dirs): --data-dir,
$NOEIRA_DATA, the cache ($NOEIRA_DATA, else $XDG_CACHE_HOME/noeira, else ~/.cache/noeira).
  mnist, fashion-mnist  <dir>/<name>/ with the four IDX .gz files (fashion-mnist also
                        /usr/share/datasets/fashion-mnist)
  cifar10               <dir>/cifar10/cifar-10-batches-bin/{data_batch_1..5,test_batch}.bin,
                        else read from <dir>/cifar10/cifar-10-binary.tar.gz in place
  cifar10-subset        <dir>/cifar10/{data_batch_1_first4000,test_batch_first1000}.bin,
                        checked by record count and sha256 (datasets/cifar10.cpp)
"""
from __future__ import annotations

import gzip
import hashlib
import os
import struct
import tarfile

import numpy as np

from .common import DATASETS, SAMPLE_SHAPES, TEXT_DATASETS, TwinError

IDX_FILES = {
    "train_images": "train-images-idx3-ubyte.gz",
    "train_labels": "train-labels-idx1-ubyte.gz",
    "test_images": "t10k-images-idx3-ubyte.gz",
    "test_labels": "t10k-labels-idx1-ubyte.gz",
}
IDX_SETS = {
    "mnist": {"subdir": "mnist", "fallbacks": []},
    "fashion-mnist": {"subdir": "fashion-mnist",
                      "fallbacks": ["/usr/share/datasets/fashion-mnist"]},
}

CIFAR_RECORD = 3073
CIFAR_IMAGE = 3072
CIFAR_PER_FILE = 10000
CIFAR_DIR = "cifar-10-batches-bin"
CIFAR_ARCHIVE = "cifar-10-binary.tar.gz"
CIFAR_TRAIN = [f"data_batch_{i}.bin" for i in range(1, 6)]
CIFAR_TEST = "test_batch.bin"
# (relative path, records, sha256) as pinned in datasets/cifar10.cpp
CIFAR_SUBSET = {
    "train": ("cifar10/data_batch_1_first4000.bin", 4000,
              "0993cf8b8e43bc207603aef9787006995746513f5e3fa5a52e06d1b069926330"),
    "test": ("cifar10/test_batch_first1000.bin", 1000,
             "8314c96d7cd65618193bab23acdd5d4c4af15bf6dd00a1781d55beedf3be1ef5"),
}


def default_cache_dir():
    for var, tail in (("NOEIRA_DATA", ()), ("XDG_CACHE_HOME", ("noeira",)),
                      ("HOME", (".cache", "noeira"))):
        v = os.environ.get(var)
        if v:
            return os.path.join(v, *tail)
    return os.path.join("/tmp", "noeira-cache")


def data_dirs(data_dir):
    out = []
    for d in (data_dir, os.environ.get("NOEIRA_DATA") or None, default_cache_dir()):
        if d and d not in out:
            out.append(d)
    return out


# --------------------------------------------------------------------------- IDX

def _read_idx_gz(path, want_ndim):
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


def _load_idx(name, dirs):
    spec = IDX_SETS[name]
    cands = [os.path.join(d, spec["subdir"]) for d in dirs] + list(spec["fallbacks"])
    found = None
    for c in cands:
        if all(os.path.isfile(os.path.join(c, f)) for f in IDX_FILES.values()):
            found = c
            break
    if found is None:
        raise TwinError(f"dataset '{name}': the four IDX .gz files were not found in "
                        f"{' or '.join(cands)}; pass --data-dir DIR (holding {spec['subdir']}/)")
    tri = _read_idx_gz(os.path.join(found, IDX_FILES["train_images"]), 3)
    trl = _read_idx_gz(os.path.join(found, IDX_FILES["train_labels"]), 1)
    tei = _read_idx_gz(os.path.join(found, IDX_FILES["test_images"]), 3)
    tel = _read_idx_gz(os.path.join(found, IDX_FILES["test_labels"]), 1)
    if tri.shape[0] != trl.shape[0] or tei.shape[0] != tel.shape[0]:
        raise TwinError(f"dataset '{name}' in {found}: image and label counts differ")
    return found, tri, trl, tei, tel


# --------------------------------------------------------------------------- CIFAR-10

def _cifar_records(raw, where, want):
    if len(raw) == 0:
        raise TwinError(f"{where} is empty (an interrupted download or extraction?)")
    if len(raw) % CIFAR_RECORD:
        raise TwinError(f"{where} is {len(raw)} bytes, not a whole number of 3073-byte "
                        "CIFAR-10 records (1 label + 3072 pixels)")
    n = len(raw) // CIFAR_RECORD
    if want and n != want:
        raise TwinError(f"{where} holds {n} records but must hold {want}")
    rec = np.frombuffer(raw, dtype=np.uint8).reshape(n, CIFAR_RECORD)
    labels = rec[:, 0]
    if labels.size and int(labels.max()) >= 10:
        bad = int(np.argmax(labels >= 10))
        raise TwinError(f"{where} has label {int(labels[bad])} in record {bad} but CIFAR-10 "
                        "labels are 0-9: corrupt, or not a CIFAR-10 binary file")
    return rec[:, 1:].reshape(n, 3, 32, 32), labels


def _read_file(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise TwinError(f"cannot read {path}: {e.strerror or e}")


def _load_cifar_full(dirs):
    for d in dirs:
        batches = os.path.join(d, "cifar10", CIFAR_DIR)
        if not os.path.isdir(batches):
            continue
        for m in CIFAR_TRAIN + [CIFAR_TEST]:
            if not os.path.isfile(os.path.join(batches, m)):
                raise TwinError(f"{batches} lacks {m} (an incomplete copy); point --data-dir "
                                "at a complete copy")
        tr = [_cifar_records(_read_file(os.path.join(batches, m)), os.path.join(batches, m),
                             CIFAR_PER_FILE) for m in CIFAR_TRAIN]
        te = _cifar_records(_read_file(os.path.join(batches, CIFAR_TEST)),
                            os.path.join(batches, CIFAR_TEST), CIFAR_PER_FILE)
        return batches, tr, te
    for d in dirs:
        arch = os.path.join(d, "cifar10", CIFAR_ARCHIVE)
        if not os.path.isfile(arch):
            continue
        try:   # read the members in place; the cache is the C++ side's to extract into
            with tarfile.open(arch, "r:gz") as tf:
                def member(m):
                    f = tf.extractfile(f"{CIFAR_DIR}/{m}")
                    if f is None:
                        raise KeyError(m)
                    return f.read()
                tr = [_cifar_records(member(m), f"{arch}:{m}", CIFAR_PER_FILE)
                      for m in CIFAR_TRAIN]
                te = _cifar_records(member(CIFAR_TEST), f"{arch}:{CIFAR_TEST}", CIFAR_PER_FILE)
        except (OSError, EOFError, tarfile.TarError, KeyError) as e:
            raise TwinError(f"cannot read {arch}: {e} (corrupt or truncated archive?)")
        return arch, tr, te
    looked = ", ".join(os.path.join(d, "cifar10", x) for d in dirs
                       for x in (CIFAR_DIR, CIFAR_ARCHIVE))
    raise TwinError(f"dataset 'cifar10': neither {CIFAR_DIR}/ nor {CIFAR_ARCHIVE} found "
                    f"(looked in {looked}); run noeira-bench once to download it, or pass "
                    "--data-dir DIR (holding cifar10/)")


def _load_cifar_subset(dirs):
    out = {}
    for part, (rel, records, sha) in CIFAR_SUBSET.items():
        looked = [os.path.join(d, rel) for d in dirs]
        path = next((p for p in looked if os.path.isfile(p)), None)
        if path is None:
            raise TwinError(f"{rel} not found (looked in {', '.join(looked)}); cifar10-subset "
                            "is never downloaded: point --data-dir or NOEIRA_DATA at "
                            "shared/data beside the project, or use --dataset cifar10")
        raw = _read_file(path)
        recs = _cifar_records(raw, path, records)
        got = hashlib.sha256(raw).hexdigest()
        if got != sha:
            raise TwinError(f"{path} is corrupt or a different version: sha256 {got}, "
                            f"expected {sha}")
        out[part] = (path, recs)
    where = os.path.dirname(out["train"][0])
    return where, [out["train"][1]], out["test"][1]


# --------------------------------------------------------------------------- normalise

def per_channel(value, key, channels, name):
    """The recipe's mean or std as float32 per channel (one number applies to all)."""
    vals = value if isinstance(value, list) else [value]
    if not vals or any(not isinstance(v, (int, float)) or isinstance(v, bool) for v in vals):
        raise TwinError(f"recipe: dataset.normalize.{key} must be a number or a list of numbers")
    if len(vals) == 1:
        vals = vals * channels
    if len(vals) != channels:
        raise TwinError(f"recipe: dataset.normalize.{key} has {len(vals)} values but data set "
                        f"{name} has {channels} channel{'' if channels == 1 else 's'}; give "
                        "one number, or one per channel")
    return np.array([np.float32(v) for v in vals], dtype=np.float32)


def normalise(u8, mean, std):
    """u8 (N, C, H, W) -> float32 (x / 255 - mean[c]) / std[c], one rounding per op."""
    x = u8.astype(np.float32) / np.float32(255.0)
    x -= mean[None, :, None, None]
    x /= std[None, :, None, None]
    return x


def pad_fill(mean, std):
    """What a u8 0 normalises to, per channel: the augmenter's padding value."""
    return (np.float32(0.0) / np.float32(255.0) - mean) / std


def load_dataset(name, data_dir, normalize):
    """-> dict(dir, shape (C,H,W), mean, std (float32 per channel), train_x/test_x float32
    (N, C, H, W), train_y/test_y int64)."""
    if name in TEXT_DATASETS:
        raise TwinError(f"dataset '{name}' is a token corpus for the gpt family; this recipe "
                        f"needs an image data set ({', '.join(sorted(SAMPLE_SHAPES))})")
    if name not in SAMPLE_SHAPES:
        raise TwinError(f"dataset '{name}' is not supported by the twin "
                        f"({', '.join(DATASETS)})")
    dirs = data_dirs(data_dir)
    shape = SAMPLE_SHAPES[name]
    norm = normalize if isinstance(normalize, dict) else {}
    mean = per_channel(norm.get("mean", 0.0), "mean", shape[0], name)
    std = per_channel(norm.get("std", 1.0), "std", shape[0], name)
    if name in IDX_SETS:
        where, tri, trl, tei, tel = _load_idx(name, dirs)
        trx, tex = tri.reshape((-1,) + shape), tei.reshape((-1,) + shape)
    else:
        where, tr, te = (_load_cifar_full if name == "cifar10" else _load_cifar_subset)(dirs)
        trx = np.concatenate([x for x, _ in tr]) if len(tr) > 1 else tr[0][0]
        trl = np.concatenate([y for _, y in tr]) if len(tr) > 1 else tr[0][1]
        tex, tel = te
    return {"dir": where, "shape": shape, "mean": mean, "std": std,
            "train_x": normalise(trx, mean, std), "train_y": trl.astype(np.int64),
            "test_x": normalise(tex, mean, std), "test_y": tel.astype(np.int64)}
