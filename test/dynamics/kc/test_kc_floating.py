"""A guaranteed K_c for floating-base models.

The free-flyer's Gamma (its six base speeds included, not symmetric in its
last two indices there) must stay within the first, configuration-independent
bound: checked per column k on random configurations (random base poses:
Gamma does not depend on them) and against an independent ascent of k_c over
the joints (scipy's L-BFGS-B from random starts). The refinement's lower end
is a k_c attained at its witness, a full configuration q of length nq.
"""
import numpy as np
import pytest
from scipy.optimize import minimize

from robots import example_robot_urdf, random_urdf
from robot_dynamics_ros.dynamics import christoffel_symbols, coriolis_bounds, load_urdf
from robot_dynamics_ros.dynamics.kc import refinement_for
from robot_dynamics_ros.dynamics.kc.first_bound import first_upper_bound

ROBOTS = {
    "solo12": lambda: load_urdf(example_robot_urdf("solo12"), base="floating"),
    "random-tree-8": lambda: load_urdf(random_urdf(np.random.default_rng(11), 8, tree=True),
                                       base="floating"),
    "random-chain-5": lambda: load_urdf(random_urdf(np.random.default_rng(12), 5), base="floating"),
}


def column_norms(model, q):
    gamma = christoffel_symbols(model, q)
    return np.array([np.linalg.norm(gamma[:, :, k], 2) for k in range(model.nv)])


def search_box(model):
    lower, upper, _ = model.joint_limits()
    limited = np.isfinite(lower) & np.isfinite(upper)
    return np.where(limited, lower, -np.pi), np.where(limited, upper, np.pi)


def with_base(model, rng, joints):
    quaternion = rng.normal(size=4)
    return np.concatenate([rng.uniform(-5, 5, 3), quaternion / np.linalg.norm(quaternion), joints])


@pytest.mark.parametrize("name", ROBOTS)
def test_first_bound_holds_the_free_flyer_symbols(name):
    model = ROBOTS[name]()
    assert model.floating
    value, norms = first_upper_bound(model)
    assert np.isfinite(value) and len(norms) == model.nv
    rng = np.random.default_rng(3)
    low, high = search_box(model)
    worst = np.zeros(model.nv)
    for _ in range(300):
        q = with_base(model, rng, rng.uniform(low, high))
        parts = column_norms(model, q)
        worst = np.maximum(worst, parts)
        assert np.all(parts <= norms * (1 + 1e-12)), np.flatnonzero(parts > norms)
        assert np.sqrt(np.sum(parts ** 2)) <= value
    # An independent ascent of k_c over the joints, the base pose fixed at random.
    base_rng = np.random.default_rng(4)

    def negative_kc(joints):
        return -np.sqrt(np.sum(column_norms(model, with_base(model, base_rng, joints)) ** 2))

    best = 0.0
    for start in rng.uniform(low, high, (4, len(low))):
        found = minimize(negative_kc, start, method="L-BFGS-B", bounds=list(zip(low, high)),
                         options={"maxiter": 40})
        best = max(best, -found.fun)
    assert best <= value
    print(f"\n{name}: first bound {value:.4g}; ascent reached {best:.4g}; "
          f"base columns bounded by {norms[:6].round(3)}, reached {worst[:6].round(3)}")


@pytest.mark.parametrize("name", ["solo12", "random-tree-8"])
def test_refined_interval_of_a_floating_model(name):
    model = ROBOTS[name]()
    refinement = refinement_for(model)
    interval = refinement.refine(1.0)
    assert 0.0 < interval.lower <= interval.upper <= refinement.first_bound
    assert interval.witness.shape == (model.nq,)
    kc = np.sqrt(np.sum(column_norms(model, interval.witness) ** 2))
    assert abs(kc - interval.lower) <= 1e-12 * kc
    bounds = coriolis_bounds(model, interval.witness, np.ones(model.nv))
    assert bounds.kc_global_lower <= bounds.kc_global
    assert bounds.kc_config <= bounds.kc_global
