"""The node's background refinement of K_c (kc_refinement.KcRefiner), without ROS.

What the node relies on: the first guaranteed bound is there before any
refinement, the interval only tightens while the thread works (upper never
up, lower never down), the thread follows the served model and leaves the
old one alone, stops within its step, and a zero budget keeps the first bound.
"""
import pickle
import time

import numpy as np
import pytest

from robot_dynamics_ros.dynamics import christoffel_symbols, load_urdf, mass_matrix
from robot_dynamics_ros.dynamics.kc.search import refinement_for
from robot_dynamics_ros.dynamics.model.puma import puma_urdf
from robot_dynamics_ros.node.kc_refinement import KcRefiner

# refines K_c against time budgets of seconds
pytestmark = pytest.mark.slow


def kc_at(model, q):
    gamma = christoffel_symbols(model, q)
    return np.sqrt(sum(np.linalg.norm(gamma[:, :, k], 2) ** 2 for k in range(model.nv)))


def puma_bare_and_loaded():
    """The PUMA, and the PUMA with 2 kg on its last link: two models whose K_c differ."""
    bare = load_urdf(puma_urdf())
    return bare, bare.with_payload(bare.link_names[-1], 2.0, [0.0, 0.0, 0.05], 0.01 * np.eye(3))


def wait_for(predicate, timeout):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


def test_the_workers_copy_of_a_model_is_the_same_model_without_its_caches():
    """The refinement runs on a pickled copy (the worker process), whose
    interval the node merges into the original's: the copy must compute
    exactly what the original does, payload included."""
    bare, model = puma_bare_and_loaded()
    mass_matrix(model, np.zeros(model.nq))  # fills the original's caches
    copy = pickle.loads(pickle.dumps(model))
    assert copy.cache == {} and copy.payloads.keys() == model.payloads.keys()
    q = np.random.default_rng(3).uniform(-3, 3, (20, model.nq))
    assert np.array_equal(christoffel_symbols(copy, q), christoffel_symbols(model, q))
    assert np.array_equal(mass_matrix(copy, q), mass_matrix(model, q))
    assert not np.allclose(mass_matrix(copy, q), mass_matrix(bare, q)), "the payload was lost"


def test_refines_the_served_model_monotonically_then_stops():
    model = load_urdf(puma_urdf())
    # the search's kernels compiled (or loaded) here first, on another copy of
    # the model: the worker's budget then goes to the search, whatever the load
    refinement_for(load_urdf(puma_urdf()), memory_limit_mb=50.0).refine(0.2)
    refiner = KcRefiner(time_budget=5.0, memory_limit_mb=50.0)
    first = refiner.refinement(model).interval
    try:
        refiner.follow(model)
        seen = [first]
        end = time.monotonic() + 30.0
        while refiner.status(model)["kc_refinement"] == "running" and time.monotonic() < end:
            seen.append(refiner.refinement(model).interval)
            time.sleep(0.02)
        seen.append(refiner.refinement(model).interval)
        status = refiner.status(model)
        assert status["kc_refinement"] in ("done", "budget spent"), status
        uppers = [i.upper for i in seen]
        lowers = [i.lower for i in seen]
        assert all(b <= a for a, b in zip(uppers, uppers[1:])), "kc_global went up"
        assert all(b >= a for a, b in zip(lowers, lowers[1:])), "kc_global_lower went down"
        last = seen[-1]
        assert last.upper <= first.upper and last.lower > first.lower, (first, last)
        # The lower end is attained at its witness; the upper end bounds k_c there.
        assert abs(kc_at(model, last.witness) - last.lower) <= 1e-9 * last.lower
        assert float(status["kc_global"]) == float(f"{last.upper:.6g}")
    finally:
        refiner.stop()
    assert refiner._process.poll() is not None


def test_follows_a_payload_swap_and_leaves_the_old_model():
    bare, loaded = puma_bare_and_loaded()
    refiner = KcRefiner(time_budget=30.0, memory_limit_mb=50.0)
    try:
        refiner.follow(bare)
        assert wait_for(lambda: float(refiner.status(bare)["kc_refinement_s"]) > 0.2, 20.0)
        refiner.follow(loaded)
        time.sleep(2 * 0.1)  # the step under way on the old model ends
        old = refiner.refinement(bare).interval
        assert refiner.status(bare)["kc_refinement_s"] == "0.0"  # no longer the one followed
        assert wait_for(lambda: float(refiner.status(loaded)["kc_refinement_s"]) > 0.2, 20.0)
        assert refiner.refinement(bare).interval[:2] == old[:2]
    finally:
        refiner.stop()


def test_refinement_is_opt_in_and_a_zero_budget_keeps_the_first_bound():
    """By default (budget 0) no refinement process starts: it would take a
    core from the control loop."""
    model = load_urdf(puma_urdf())
    refiner = KcRefiner(memory_limit_mb=50.0)
    first = refiner.refinement(model).interval
    try:
        refiner.follow(model)
        time.sleep(0.5)
        assert refiner.refinement(model).interval[:2] == first[:2]
        assert refiner.status(model)["kc_refinement"] == "budget spent"
        assert refiner._process is None
    finally:
        refiner.stop()


def test_a_worker_that_dies_leaves_the_interval_and_says_so():
    """Killed (out of memory, say), the refinement process takes nothing with
    it: the interval stays what it was, following another model still works,
    and the status says the refinement stopped."""
    bare, loaded = puma_bare_and_loaded()
    refiner = KcRefiner(time_budget=30.0, memory_limit_mb=50.0)
    try:
        refiner.follow(bare)
        assert wait_for(lambda: float(refiner.status(bare)["kc_refinement_s"]) > 0.2, 30.0)
        refiner._process.kill()
        assert wait_for(lambda: refiner.status(bare)["kc_refinement"] != "running", 10.0)
        before = refiner.refinement(bare).interval
        assert refiner.status(bare)["kc_refinement"] == "stopped: its process exited"
        refiner.follow(loaded)
        assert refiner.status(loaded)["kc_refinement"] == "stopped: its process exited"
        assert refiner.refinement(bare).interval[:2] == before[:2]
    finally:
        refiner.stop()
