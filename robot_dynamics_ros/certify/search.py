"""The certificate search on the distributed engine, checkpointed.

1. Per part of the model (``partition.searched_parts``), one task each:
   its lower end (random samples and an ascent, a fixed seed) and its box
   setup (the expansion of Gamma). The part's threshold is fixed then,
   ``gap`` times its lower end: a box whose bound is at most the threshold
   is settled. Fixed, so the leaves do not depend on the order of the
   work: an interrupted and resumed run ends with the same leaves as an
   uninterrupted one.
2. Units (``partition.refine_unit``): the open boxes of largest bound, a
   few per unit, each unit refining for ``unit_seconds`` and returning its
   leaves and the boxes still open. Twice as many units as workers are
   kept in flight; each result is logged to the checkpoint, then merged
   (``checkpoint.PartState.apply``: sound in any order).
3. Stops when no box is open (every part within its threshold) or at the
   time budget; the certificate's upper end is then the largest bound of
   any box, open or settled (and the parts' first bounds where no box
   search applies), its lower end k_c at the parts' witnesses put together.
"""
from __future__ import annotations

import time

import numpy as np
from dask.distributed import wait

from robot_dynamics_ros.dynamics.kc.certificate import METHOD, METHOD_VERSION, combined_upper, model_hash, payloads_document
from robot_dynamics_ros.dynamics.kc.constant import config_coriolis_constant, value_margin
from robot_dynamics_ros.dynamics.kc.partition import lower_end, prepare, refine_unit, root_box, searched_parts
from .checkpoint import Checkpoint, PartState
from .progress import Progress

# largest number of boxes one unit starts from
_BOXES_PER_UNIT = 256
# seconds between snapshots of the whole state (the units since are logged one by one)
_SNAPSHOT_EVERY = 30.0


class CheckpointMismatch(ValueError):
    """A checkpoint made for another model or other options."""


def _unit(model, part, levels, index, bounds, axes, threshold, seconds):
    """A unit as the engine runs it: ``refine_unit``'s result as a dict of arrays."""
    return refine_unit(model, part, levels, index, bounds, axes, threshold, seconds)._asdict()


def _start(client, model, gap, checkpoint, progress):
    """The parts' lower ends and setups (tasks), the checkpoint created."""
    parts = searched_parts(model)
    remote = client.scatter(model, broadcast=True)
    models = [remote] if len(parts) == 1 else [client.scatter(part, broadcast=True) for part, _ in parts]
    lowers = [client.submit(lower_end, part_model, pure=False) for part_model in models]
    setups = [client.submit(prepare, part_model, pure=False) for part_model in models]
    roots = [client.submit(root_box, part_model, setup, pure=False) for part_model, setup in zip(models, setups)]
    lowers, setups = client.gather(lowers), client.gather(setups)
    meta = {"model_hash": model_hash(model), "model_name": model.name, "gap": gap, "parts": [],
            "method_version": METHOD_VERSION, "seconds": 0.0}
    states = []
    for number, ((part_model, coordinates), (lower, witness), setup, root) in enumerate(
            zip(parts, lowers, setups, roots)):
        if setup.setup is None:
            kind = "constant" if setup.constant else "first_bound"
            m = 0
        else:
            kind, m = "boxes", len(setup.setup.free)
        meta["parts"].append({"coordinates": [int(c) for c in coordinates], "kind": kind,
                              "threshold": gap * lower, "lower": lower, "witness": witness.tolist(),
                              "first_bound": setup.first_bound, "m": m})
        state = PartState(m, lower, witness)
        if kind == "boxes":
            levels, index, bounds, axes, value, q = root.result()
            state.add_open(levels, index, bounds, axes)
            if value > state.lower:
                state.lower, state.witness = value, q
        states.append(state)
    checkpoint.create(meta, setups)
    checkpoint.snapshot(-1, states, {"units": 0, "boxes": 0})
    return meta, setups, states


def _part_upper(meta_part, state, setup, model_part):
    if meta_part["kind"] == "first_bound":
        return meta_part["first_bound"]
    if meta_part["kind"] == "constant":
        return state.lower + value_margin(model_part, setup.first_bound)
    return max(state.lower, state.largest_leaf(), state.largest_open())


def certify(model, *, gap=1.05, time_budget=np.inf, client, workers, checkpoint_dir,
            unit_seconds=2.0, progress=None, stop_after_units=None):
    """Search for a K_c certificate of ``model`` on the Dask ``client``
    (``workers`` of them), resuming from ``checkpoint_dir`` when it holds a
    search of the same model and gap. Returns (document, leaves) for
    ``certificate.write_certificate``. ``stop_after_units``: stop (as a kill
    would, without the final snapshot) after that many merged units (tests)."""
    progress = progress or Progress(quiet=True)
    checkpoint = Checkpoint(checkpoint_dir)
    parts = searched_parts(model)
    started = time.monotonic()
    if checkpoint.exists():
        meta, setups, states, seq, counters = _resume(checkpoint, checkpoint_dir, model, gap, len(parts))
    else:
        meta, setups, states = _start(client, model, gap, checkpoint, progress)
        seq, counters = -1, {"units": 0, "boxes": 0}
    search = _Search(model, parts, meta, setups, states, checkpoint, seq, counters,
                     started=started, gap=gap, time_budget=time_budget, progress=progress)
    if not search.run(client, workers, unit_seconds, stop_after_units):
        return None
    search.snapshot()
    search.show(final=True)
    return search.document(workers, unit_seconds)


def _resume(checkpoint, checkpoint_dir, model, gap, count):
    """(meta, setups, states, seq, counters) of the search in ``checkpoint``
    (``count`` parts); ``CheckpointMismatch`` when it is of another model or
    another gap."""
    meta = checkpoint.meta()
    if meta["model_hash"] != model_hash(model):
        raise CheckpointMismatch(f"checkpoint {checkpoint_dir} is of another model ({meta['model_name']}); "
                                 "remove it or give another --checkpoint")
    if meta["gap"] != gap:
        raise CheckpointMismatch(f"checkpoint {checkpoint_dir} is a search to gap {meta['gap']}, "
                                 f"not {gap}; give --gap {meta['gap']} to resume it")
    setups = [checkpoint.setup(number) for number in range(count)]
    states = [PartState(p["m"], p["lower"], p["witness"]) for p in meta["parts"]]
    seq, counters = checkpoint.load(states)
    return meta, setups, states, seq, counters


class _Search:
    """One run of the search (steps 2 and 3 of the module docstring): the
    parts' states, the units in flight, the checkpoint they are logged to,
    the clock (with the seconds of the runs before a resume) and the
    progress line."""

    def __init__(self, model, parts, meta, setups, states, checkpoint, seq, counters, *,
                 started, gap, time_budget, progress):
        self.model, self.parts, self.meta, self.setups, self.states = model, parts, meta, setups, states
        self.checkpoint, self.seq, self.counters = checkpoint, seq, counters
        self.started, self.gap, self.time_budget, self.progress = started, gap, time_budget, progress
        self.spent_before = meta.get("seconds", 0.0)
        self.in_flight = {}  # future -> (part number, keys, levels, index)
        self.merged_here = 0

    def elapsed(self):
        """Seconds of search: this run's since ``started`` and the runs' before a resume."""
        return self.spent_before + time.monotonic() - self.started

    def interval(self):
        """(lower, upper) of K_c now: k_c at the parts' witnesses put
        together, and the parts' upper ends combined."""
        uppers = [_part_upper(p, s, setup, part_model) for p, s, setup, (part_model, _)
                  in zip(self.meta["parts"], self.states, self.setups, self.parts)]
        return combined_lower(self.model, self.parts, self.states), combined_upper(uppers)

    def show(self, final=False):
        lower, upper = self.interval()
        boxes = [p for p, m in zip(self.states, self.meta["parts"]) if m["kind"] == "boxes"]
        settled = min((s.settled_volume for s in boxes), default=1.0)
        rate = self.rate_boxes / max(1e-9, time.monotonic() - self.rate_since)
        self.progress.show(lower=lower, upper=upper, gap=self.gap,
                           open_boxes=sum(len(s.open) for s in self.states), rate=rate, settled=settled,
                           elapsed=self.elapsed(), budget=self.time_budget, final=final)

    def snapshot(self):
        """The whole state to the checkpoint, with the seconds spent so far."""
        self.meta["seconds"] = self.elapsed()
        self.checkpoint.write_meta(self.meta)
        self.checkpoint.snapshot(self.seq, self.states, self.counters)

    def run(self, client, workers, unit_seconds, stop_after_units):
        """Keep twice as many units as workers in flight, merge each result,
        until no box is open or the time budget is spent; a snapshot every
        ``_SNAPSHOT_EVERY`` seconds. False when stopped after
        ``stop_after_units`` merged units (the units in flight cancelled)."""
        model, parts = self.model, self.parts
        remote_models = ([client.scatter(model, broadcast=True)] if len(parts) == 1 else
                         [client.scatter(part, broadcast=True) for part, _ in parts])
        remote_setups = [client.scatter(setup, broadcast=True) for setup in self.setups]
        last_snapshot = time.monotonic()
        self.rate_boxes, self.rate_since = 0, time.monotonic()
        while True:
            if self.elapsed() < self.time_budget:
                self._submit(client, remote_models, remote_setups, workers, unit_seconds)
            if not self.in_flight:
                return True
            done, _ = wait(list(self.in_flight), return_when="FIRST_COMPLETED")
            self._merge(done)
            if stop_after_units is not None and self.merged_here >= stop_after_units:
                for future in self.in_flight:
                    future.cancel()
                return False
            if time.monotonic() - last_snapshot > _SNAPSHOT_EVERY:
                self.snapshot()
                last_snapshot = time.monotonic()
            self.show()

    def _submit(self, client, remote_models, remote_setups, workers, unit_seconds):
        """New units until 2 ``workers`` are in flight, each from the part
        whose open box has the largest bound: its share of that part's open
        boxes, at most ``_BOXES_PER_UNIT``."""
        states = self.states
        while len(self.in_flight) < 2 * workers:
            open_parts = [n for n, s in enumerate(states) if len(s.open) > len(s.in_flight)]
            if not open_parts:
                break
            number = max(open_parts, key=lambda n: states[n].largest_open())
            state = states[number]
            share = (len(state.open) - len(state.in_flight)) // (2 * workers)
            levels, index, bounds, axes, keys = state.take(max(1, min(_BOXES_PER_UNIT, share)))
            future = client.submit(_unit, remote_models[number], remote_setups[number], levels, index, bounds,
                                   axes, self.meta["parts"][number]["threshold"], unit_seconds, pure=False)
            self.in_flight[future] = (number, keys, levels, index)

    def _merge(self, done):
        """Each finished unit logged to the checkpoint, then merged into its
        part's state; a failed one's boxes are open again."""
        for future in done:
            number, keys, levels, index = self.in_flight.pop(future)
            if future.status != "finished":
                self.states[number].release(keys)
                continue
            result = future.result()
            self.seq += 1
            self.checkpoint.log_unit(self.seq, number, levels, index, result)
            if self.states[number].apply(keys, result):
                self.counters["units"] += 1
                self.counters["boxes"] += int(result["boxes"])
                self.rate_boxes += int(result["boxes"])
                self.merged_here += 1

    def document(self, workers, unit_seconds):
        """(document, leaves): the certificate's fields, and per part searched
        by boxes its leaves (settled and open boxes)."""
        model, meta, counters, gap = self.model, self.meta, self.counters, self.gap
        lower, upper = self.interval()
        witness = combined_witness(model, self.parts, self.states)
        leaves = {}
        described = []
        for number, (state, part_meta, setup, (part_model, _)) in enumerate(
                zip(self.states, meta["parts"], self.setups, self.parts)):
            leaf_levels, leaf_index, leaf_bounds, open_levels, open_index, open_bounds, _ = state.arrays()
            if part_meta["kind"] == "boxes":
                leaves[number] = (np.concatenate([leaf_levels, open_levels]),
                                  np.concatenate([leaf_index, open_index]),
                                  np.concatenate([leaf_bounds, open_bounds]))
            described.append({"coordinates": part_meta["coordinates"], "kind": part_meta["kind"],
                              "upper": _part_upper(part_meta, state, setup, part_model), "lower": state.lower,
                              "witness": state.witness.tolist(), "threshold": part_meta["threshold"],
                              "boxes": len(leaves[number][2]) if number in leaves else 0})
        document = {
            "kc_global": upper, "kc_global_lower": lower, "witness_q": witness.tolist(),
            "model_hash": meta["model_hash"], "model_name": model.name, "joint_names": list(model.joint_names),
            "payloads": payloads_document(model), "payload_range": None, "method": METHOD,
            "method_version": METHOD_VERSION, "seconds": meta["seconds"], "gap": gap,
            "reached": bool(upper <= gap * lower * (1 + 1e-12)),
            "work": {"units": counters["units"], "boxes_bounded": counters["boxes"], "workers": workers,
                     "unit_seconds": unit_seconds},
            "parts": described,
        }
        return document, leaves


def combined_witness(model, parts, states):
    """q with every part's witness in its coordinates (one part: its witness)."""
    if len(parts) == 1:
        return np.asarray(states[0].witness, dtype=float)
    witness = np.zeros(model.nq)
    for (_, coordinates), state in zip(parts, states):
        witness[coordinates] = state.witness
    return witness


def combined_lower(model, parts, states):
    """k_c at the combined witness (the parts' k_c squared add up)."""
    value = config_coriolis_constant(model, combined_witness(model, parts, states)[None])[0]
    return float(value) if np.isfinite(value) else 0.0
