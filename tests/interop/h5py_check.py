#!/usr/bin/env python3
"""Reads the csr group of an spconv container with h5py, as any Python user would
(specs/container.md, section 8), and compares it exactly with scipy's reading of the
Matrix Market source: same shape, same canonical CSR arrays, same value bits.

Usage: h5py_check.py FILE.h5 SOURCE.mtx     (exit 0: equal, 1: different, 2: usage)
Compressed files need HDF5_PLUGIN_PATH=<build>/plugins for the zstd filter.
"""
import json
import sys

import h5py
import numpy as np
import scipy.io
import scipy.sparse as sp


def text(v):
    """String attributes are fixed-length (bytes in h5py) or variable-length (str)."""
    return v.decode("utf-8") if isinstance(v, bytes) else str(v)


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    h5_path, mtx_path = argv[1], argv[2]
    problems = []

    with h5py.File(h5_path, "r") as f:
        rows, cols = (int(x) for x in f.attrs["shape"])
        nnz = int(f.attrs["nnz"])
        value_type = text(f.attrs["value_type"])
        index_type = text(f.attrs["index_type"])
        g = f["csr"]
        ptr, idx, val = g["pointers_to_1"][()], g["indices_1"][()], g["values"][()]
        descriptor = json.loads(text(g.attrs["binsparse"]))["binsparse"]

    # The stored element types are the declared ones, readable by numpy as they are.
    for name, arr, want in (("pointers_to_1", ptr, index_type), ("indices_1", idx, index_type),
                            ("values", val, value_type)):
        if arr.dtype != np.dtype(want):
            problems.append(f"{name} has dtype {arr.dtype}, the root says {want}")
        if descriptor["data_types"].get(name) != want:
            problems.append(f"binsparse data_types[{name}] = {descriptor['data_types'].get(name)}, expected {want}")
    if descriptor["format"] != "CSR" or descriptor["shape"] != [rows, cols] or \
            descriptor["number_of_stored_values"] != nnz:
        problems.append(f"binsparse descriptor {descriptor} disagrees with shape {rows}x{cols}, nnz {nnz}")
    if len(val) != nnz:
        problems.append(f"{len(val)} values, the root says nnz = {nnz}")

    a = sp.csr_matrix((val, idx, ptr), shape=(rows, cols))
    b = scipy.io.mmread(mtx_path).tocsr()
    b.sum_duplicates()
    b.sort_indices()

    if a.shape != b.shape:
        problems.append(f"shape {a.shape}, the source has {b.shape}")
    else:
        if not np.array_equal(a.indptr.astype(np.int64), b.indptr.astype(np.int64)):
            problems.append("row pointers differ")
        elif not np.array_equal(a.indices.astype(np.int64), b.indices.astype(np.int64)):
            problems.append("column indices differ")
        else:
            # Exact: float32 values widen to float64 exactly, and the source prints 17
            # significant digits, which read back to the same double.
            mine = a.data.astype(np.float64)
            diff = np.flatnonzero(mine.view(np.uint64) != b.data.astype(np.float64).view(np.uint64))
            if diff.size:
                k = diff[0]
                problems.append(f"{diff.size} values differ, first at {k}: {mine[k]!r} vs {b.data[k]!r}")

    for p in problems:
        print(f"{h5_path}: {p}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
