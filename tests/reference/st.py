"""Minimal safetensors reader/writer on numpy, for the reference tests.

Debian has no python3-safetensors; the format is simple enough to read here
independently of the C reader (which is what we are checking)."""
import json
import struct

import numpy as np

_DT = {"F32": np.float32, "F64": np.float64, "F16": np.float16, "I64": np.int64,
       "I32": np.int32, "U8": np.uint8}


def load(path):
    """Returns (tensors: dict name -> np.ndarray, metadata: dict)."""
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    base = 8 + n
    meta = header.pop("__metadata__", {}) or {}
    out = {}
    for name, info in header.items():
        b, e = info["data_offsets"]
        buf = raw[base + b:base + e]
        if info["dtype"] == "BF16":
            u16 = np.frombuffer(buf, dtype="<u2").astype(np.uint32) << 16
            arr = u16.view(np.float32)
        else:
            arr = np.frombuffer(buf, dtype=np.dtype(_DT[info["dtype"]]).newbyteorder("<"))
        out[name] = arr.reshape(info["shape"]).copy()
    return out, meta


def save(path, tensors, metadata=None):
    """tensors: dict name -> np.ndarray (float32/float64/int64/int32/uint8)."""
    rev = {np.dtype(v): k for k, v in _DT.items()}
    header, blobs, off = {}, [], 0
    for name in sorted(tensors):
        a = np.ascontiguousarray(tensors[name])
        b = a.astype(a.dtype.newbyteorder("<")).tobytes()
        header[name] = {"dtype": rev[a.dtype], "shape": list(a.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)
