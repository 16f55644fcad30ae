"""The certificate search's state on disk, safe against SIGKILL.

A checkpoint directory holds ``meta.json`` (the model's hash, the options,
each part's threshold, lower end and kind), ``setup-P.pkl`` (each part's
box setup, so a resumed search need not expand Gamma again), a
``snapshot.npz`` of every part's open and settled boxes up to unit number
``seq``, and one ``units/SEQ.npz`` per unit result merged since. Every file
is written under a temporary name and renamed, so a kill leaves either the
old file or the new one, never half of one; a unit's file is renamed into
place before its result counts anywhere. On resume the snapshot is loaded
and the later units applied in order, each only if its input boxes are
still open, so none is lost (a unit in flight at the kill just runs again)
and none counted twice.
"""
from __future__ import annotations

import heapq
import json
import os
import pickle
from pathlib import Path

import numpy as np


def _replace_atomically(path, write):
    """``write(temporary path)``, then rename it to ``path``."""
    path = Path(path)
    temporary = path.with_name(path.name + ".tmp" + path.suffix)
    write(temporary)
    os.replace(temporary, path)


def box_keys(levels, index):
    """One bytes key per box (row of levels, index)."""
    levels = np.ascontiguousarray(levels, dtype=np.uint8)
    index = np.ascontiguousarray(index, dtype=np.int64)
    return [a.tobytes() + b.tobytes() for a, b in zip(levels, index)]


class PartState:
    """One part's boxes: open ones (by key: levels, index, bound, side; a
    heap of the largest bound, stale entries skipped), the settled leaves,
    and the largest k_c found with its configuration."""

    def __init__(self, m, lower, witness):
        self.m = m
        self.open = {}
        self.heap = []
        self.in_flight = set()
        self.leaves = ([], [], [])
        self.lower = float(lower)
        self.witness = np.asarray(witness, dtype=float)
        self.settled_volume = 0.0

    def add_open(self, levels, index, bounds, axes):
        for key, row_levels, row_index, bound, axis in zip(box_keys(levels, index), levels, index, bounds, axes):
            self.open[key] = (np.array(row_levels, dtype=np.uint8), np.array(row_index, dtype=np.int64),
                              float(bound), int(axis))
            heapq.heappush(self.heap, (-float(bound), key))

    def add_leaves(self, levels, index, bounds):
        levels = np.asarray(levels, dtype=np.uint8).reshape(len(bounds), self.m)
        for store, values in zip(self.leaves, (levels, np.asarray(index, dtype=np.int64).reshape(len(bounds), self.m),
                                               np.asarray(bounds, dtype=float))):
            store.append(values)
        self.settled_volume += float(np.sum(np.ldexp(1.0, -levels.astype(np.int64).sum(axis=1))))

    def take(self, count):
        """Up to ``count`` open boxes of largest bound not already in flight
        (levels, index, bounds, axes, keys); they are marked in flight."""
        picked = []
        skipped = []
        while self.heap and len(picked) < count:
            bound, key = heapq.heappop(self.heap)
            if key not in self.open:
                continue  # stale: the box was split since
            if key in self.in_flight:
                skipped.append((bound, key))
                continue
            picked.append(key)
        for item in skipped:
            heapq.heappush(self.heap, item)
        self.in_flight.update(picked)
        rows = [self.open[key] for key in picked]
        return (np.array([r[0] for r in rows], dtype=np.uint8).reshape(len(rows), self.m),
                np.array([r[1] for r in rows], dtype=np.int64).reshape(len(rows), self.m),
                np.array([r[2] for r in rows]), np.array([r[3] for r in rows], dtype=np.uint8), picked)

    def release(self, keys):
        """Boxes whose unit will not return (it failed): open again for others."""
        for key in keys:
            self.in_flight.discard(key)
            if key in self.open:
                heapq.heappush(self.heap, (-self.open[key][2], key))

    def apply(self, keys, result):
        """Merge a unit's result for its input boxes ``keys``: only if all of
        them are still open (else it was merged before: skipped). Returns
        True when merged."""
        if not all(key in self.open for key in keys):
            return False
        for key in keys:
            del self.open[key]
            self.in_flight.discard(key)
        self.add_leaves(result["leaf_levels"], result["leaf_index"], result["leaf_bounds"])
        self.add_open(result["open_levels"], result["open_index"], result["open_bounds"], result["open_axes"])
        if result["best_value"] > self.lower:
            self.lower, self.witness = float(result["best_value"]), np.asarray(result["best_q"], dtype=float)
        return True

    def largest_open(self):
        while self.heap and self.heap[0][1] not in self.open:
            heapq.heappop(self.heap)
        return -self.heap[0][0] if self.heap else -np.inf

    def largest_leaf(self):
        return max((float(b.max()) for b in self.leaves[2] if len(b)), default=-np.inf)

    def arrays(self):
        """(leaf levels, leaf index, leaf bounds, open levels, open index, open bounds, open axes)."""
        leaves = tuple(np.concatenate(store) if store else np.zeros((0, self.m) if k < 2 else 0,
                                                                     dtype=(np.uint8, np.int64, float)[k])
                       for k, store in enumerate(self.leaves))
        rows = list(self.open.values())
        return leaves + (np.array([r[0] for r in rows], dtype=np.uint8).reshape(len(rows), self.m),
                         np.array([r[1] for r in rows], dtype=np.int64).reshape(len(rows), self.m),
                         np.array([r[2] for r in rows]), np.array([r[3] for r in rows], dtype=np.uint8))


class Checkpoint:
    """A checkpoint directory (module docstring)."""

    def __init__(self, directory):
        self.directory = Path(directory)
        self.units = self.directory / "units"

    def exists(self):
        return (self.directory / "meta.json").exists()

    def create(self, meta, setups):
        self.units.mkdir(parents=True, exist_ok=True)
        for number, setup in enumerate(setups):
            _replace_atomically(self.directory / f"setup-{number}.pkl",
                                lambda path, s=setup: path.write_bytes(pickle.dumps(s)))
        self.write_meta(meta)

    def write_meta(self, meta):
        _replace_atomically(self.directory / "meta.json",
                            lambda path: path.write_text(json.dumps(meta, indent=1) + "\n"))

    def meta(self):
        return json.loads((self.directory / "meta.json").read_text())

    def setup(self, number):
        return pickle.loads((self.directory / f"setup-{number}.pkl").read_bytes())

    def log_unit(self, seq, part, levels, index, result):
        """The unit's result, on disk before it counts (its input boxes:
        ``levels``, ``index``)."""
        arrays = {name: np.asarray(value) for name, value in result.items() if value is not None}
        arrays["part"] = np.asarray(part)
        arrays["in_levels"], arrays["in_index"] = np.asarray(levels), np.asarray(index)
        _replace_atomically(self.units / f"{seq:012d}.npz", lambda path: np.savez(path, **arrays))

    def snapshot(self, seq, parts, counters):
        """Every part's boxes as of unit ``seq``; then the unit files up to it go."""
        arrays = {"seq": np.asarray(seq), "counters": np.asarray(json.dumps(counters))}
        for number, part in enumerate(parts):
            for name, value in zip(("leaf_levels", "leaf_index", "leaf_bounds", "open_levels", "open_index",
                                    "open_bounds", "open_axes"), part.arrays()):
                arrays[f"{name}_{number}"] = value
            arrays[f"lower_{number}"] = np.asarray(part.lower)
            arrays[f"witness_{number}"] = part.witness
        _replace_atomically(self.directory / "snapshot.npz", lambda path: np.savez(path, **arrays))
        for unit in self.units.glob("*.npz"):
            if unit.name.endswith(".tmp.npz") or int(unit.stem) <= seq:
                unit.unlink(missing_ok=True)

    def load(self, parts):
        """Fill ``parts`` (fresh PartStates, their root boxes open) from the
        snapshot and the units after it; returns (last seq, counters)."""
        seq, counters = -1, {}
        snapshot = self.directory / "snapshot.npz"
        if snapshot.exists():
            with np.load(snapshot) as data:
                seq = int(data["seq"])
                counters = json.loads(str(data["counters"]))
                for number, part in enumerate(parts):
                    part.open.clear()
                    part.heap.clear()
                    part.add_leaves(data[f"leaf_levels_{number}"], data[f"leaf_index_{number}"],
                                    data[f"leaf_bounds_{number}"])
                    part.add_open(data[f"open_levels_{number}"], data[f"open_index_{number}"],
                                  data[f"open_bounds_{number}"], data[f"open_axes_{number}"])
                    part.lower = float(data[f"lower_{number}"])
                    part.witness = np.array(data[f"witness_{number}"])
        for unit in sorted(self.units.glob("*.npz")):
            if unit.name.endswith(".tmp.npz") or int(unit.stem) <= seq:
                continue
            with np.load(unit) as data:
                result = {name: data[name] for name in data.files}
            keys = box_keys(result["in_levels"], result["in_index"])
            parts[int(result["part"])].apply(keys, result)
            seq = int(unit.stem)
            counters["units"] = counters.get("units", 0) + 1
            counters["boxes"] = counters.get("boxes", 0) + int(result["boxes"])
        return seq, counters
