"""Parity mode: parameters (group "param") and BatchNorm running statistics (group
"buffer") from a noeira checkpoint (docs/checkpoint-format.md), matched by name. Checks
magic, version, sizes, CRC, names, dtypes and shapes; the error names the tensor."""
from __future__ import annotations

import json
import os
import struct
import zlib

import numpy as np
import torch

from .common import TwinError, log
from .recipe import recipe_hash


def _read(path):
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
    return header, tensors, data


def _match(path, group, file_tensors, ours):
    """file tensors of `group` by name against ours [(name, tensor)]; every one of ours
    must be there and nothing else. Returns [(entry, tensor)] in our order."""
    by_name = {}
    for t in file_tensors:
        n = t.get("name")
        if n in by_name:
            raise TwinError(f"checkpoint {path}: {group} tensor '{n}' appears twice")
        by_name[n] = t
    names = [n for n, _ in ours]
    missing = [n for n in names if n not in by_name]
    extra = [n for n in by_name if n not in set(names)]
    if missing or extra:
        raise TwinError(f"checkpoint {path}: its {group} tensors do not match the recipe's "
                        f"model (missing: {', '.join(missing[:5]) or 'none'}; not in the "
                        f"model: {', '.join(str(e) for e in extra[:5]) or 'none'})")
    file_order = [t.get("name") for t in file_tensors]
    if file_order != names:
        log(f"warning: checkpoint {path}: its {group} tensors are in another order than the "
            "twin's registration order" + (" (so the Philox init streams differ too)"
                                           if group == "param" else "") + "; loaded by name")
    return [(by_name[n], t) for n, t in ours]


def _copy(path, entry, dst, data):
    name = entry.get("name")
    if entry.get("dtype") != "f32":
        raise TwinError(f"checkpoint {path}: tensor '{name}' has dtype {entry.get('dtype')}, "
                        "want f32")
    shape = [int(s) for s in entry.get("shape", [])]
    if shape != list(dst.shape):
        raise TwinError(f"checkpoint {path}: tensor '{name}' has shape {shape}, the model's "
                        f"is {list(dst.shape)}")
    n = 1
    for s in shape:
        n *= s
    if int(entry["nbytes"]) != 4 * n:
        raise TwinError(f"checkpoint {path}: tensor '{name}' nbytes {entry['nbytes']} != 4*{n}")
    off = int(entry["offset"])
    arr = np.frombuffer(data[off:off + 4 * n], dtype="<f4").astype(np.float32)
    dst.copy_(torch.from_numpy(arr.reshape(shape)))


def load_checkpoint(path, params, buffers, recipe):
    """params [(name, Parameter, rule)], buffers [(name, tensor)] <- the checkpoint's
    "param" and "buffer" tensors. A checkpoint without buffer tensors leaves the running
    statistics at their initial values (with a warning)."""
    header, tensors, data = _read(path)
    ptensors = [t for t in tensors if t.get("group") == "param"]
    btensors = [t for t in tensors if t.get("group") == "buffer"]
    if len(ptensors) != len(params):
        raise TwinError(f"checkpoint {path}: {len(ptensors)} param tensors, the recipe's "
                        f"model has {len(params)}")
    if header.get("model") not in (None, recipe.get("name")):
        log(f"warning: checkpoint model '{header.get('model')}' != recipe name "
            f"'{recipe.get('name')}'")
    rh = header.get("recipe_hash")
    ours = recipe_hash(recipe)
    if rh is not None and rh != ours:
        log(f"warning: checkpoint recipe_hash {rh} != twin's {ours} (the twin's canonical "
            "dump may differ from the C++ one; shapes are checked regardless)")
    if int(header.get("step", 0) or 0) != 0:
        log(f"warning: checkpoint is at step {header.get('step')}; the twin loads parameters "
            "and buffers only (fresh optimizer state, epoch 0 batch order)")
    pairs = _match(path, "param", ptensors, [(n, p) for n, p, _ in params])
    if btensors or not buffers:
        pairs += _match(path, "buffer", btensors, buffers)
    else:
        log(f"warning: checkpoint {path} has no buffer tensors; the model's "
            f"{len(buffers)} running-statistic tensors keep their initial values (0 and 1)")
    with torch.no_grad():
        for entry, dst in pairs:
            _copy(path, entry, dst, data)
    return {"path": os.path.abspath(path), "step": header.get("step"),
            "epoch": header.get("epoch"), "seed": header.get("seed"),
            "recipe_hash": rh, "recipe_hash_matches": (rh == ours) if rh else None}
