"""Floating-base dynamics against Pinocchio's free-flyer model (issue 11).

    python bench/bench_floating.py [--rounds 100] [--calls 20]

Per call, as bench_dynamics.py: each quantity's calls from both libraries
run back to back in a shuffled order, ``--calls`` calls each, over
``--rounds`` short rounds; the figure is the median over rounds of the
per-round ratio to Pinocchio, with the median microseconds beside it.

- M, C and g of solo12 and talos_full_v2, floating (``base="floating"``
  against ``buildModelFromUrdf(path, JointModelFreeFlyer())``) and, for
  comparison, fixed (the same URDF bolted at its root link, against
  Pinocchio's fixed-base model): the floating functions should reach the
  ratio the fixed ones do.
- g1 (29 joints, nv = 35), talos_full_v2 (nv = 50), romeo (a humanoid
  with two five-finger hands, nv = 61, whose hands are massless), g1 with
  its two three-finger hands (43 joints, nv = 49, hands with mass), two
  humanoids with five-finger hands in the shape of Unitree's G1 and H1-2
  with Inspire hands (53 and 51 joints, nv = 59 and 57; ``humanoid_parents``:
  their joint trees with random inertias on every body, as those URDFs are
  not in example-robot-data) and random trees of 30 and 60 joints, all
  floating:
  ``all_terms(..., christoffel=False)`` (M, C, g and the bounds, what the
  node computes unless it publishes Gamma) against Pinocchio's route to
  the same numbers (crba, computeCoriolisMatrix, computeGeneralizedGravity
  and Gamma as nv calls of ``computeCoriolisMatrix(q, e_k)``); for the
  robots with hands and the random trees also against Pinocchio's M + C +
  g alone. Then ``all_terms`` with Gamma, and our M + C + g against
  Pinocchio's. ``all_terms`` also reports K_c, which
  the model computes once (issue 10's business): it is filled in
  beforehand, so what is timed is the per-sample work.

Issue 21's targets: G1 bounds without Gamma <= 150 us and <= 0.3x
Pinocchio's route; humanoids with hands <= 10x Pinocchio's M + C + g.
"""
import argparse
import os
import sys

import numpy as np
import pinocchio as pin

sys.path.insert(0, os.path.dirname(__file__))
from bench_dynamics import paired_rounds, report  # noqa: E402
from common import topology_urdf  # noqa: E402
from robots import PinocchioOracle, example_robot_urdf, load_pinocchio  # noqa: E402

from robot_dynamics_ros import dynamics as rd  # noqa: E402


def state(model, oracle, seed=0):
    """(our q, v, Pinocchio's q, v): a random base pose and twist, joints in [-1, 1]."""
    rng = np.random.default_rng(seed)
    joints = rng.uniform(-1.0, 1.0, len(model.joint_names))
    if model.floating:
        quaternion = rng.standard_normal(4)
        q = np.concatenate((rng.uniform(-1.0, 1.0, 3), quaternion / np.linalg.norm(quaternion),
                            joints))
    else:
        q = joints
    v = rng.uniform(-1.0, 1.0, model.nv)
    return q, v, oracle.q(q), oracle.v(v)


def robot(name, base):
    path = example_robot_urdf(name)
    model = rd.load_urdf(path, base=base)
    oracle = PinocchioOracle(load_pinocchio(path, free_flyer=base == "floating"), model.joint_names)
    return model, oracle


def mcg_cases(name, base):
    model, oracle = robot(name, base)
    pm, pd = oracle.model, oracle.data
    q, v, pq, pv = state(model, oracle)
    assert np.allclose(rd.coriolis_matrix(model, q, v), oracle.coriolis_matrix(q, v), atol=1e-10)
    return [
        (f"{name} {base} M", {"ours": lambda: rd.mass_matrix(model, q),
                              "pin": lambda: pin.crba(pm, pd, pq)}),
        (f"{name} {base} C", {"ours": lambda: rd.coriolis_matrix(model, q, v),
                              "pin": lambda: pin.computeCoriolisMatrix(pm, pd, pq, pv)}),
        (f"{name} {base} g", {"ours": lambda: rd.gravity_torques(model, q),
                              "pin": lambda: pin.computeGeneralizedGravity(pm, pd, pq)}),
    ]


def pinocchio_routes(oracle, pq, pv):
    """Pinocchio's M + C + g, and its route to all_terms' numbers: those and
    Gamma as nv calls of ``computeCoriolisMatrix(q, e_k)``."""
    pm, pd = oracle.model, oracle.data
    units = np.eye(pm.nv)

    def pin_mcg():
        pin.crba(pm, pd, pq)
        pin.computeCoriolisMatrix(pm, pd, pq, pv)
        pin.computeGeneralizedGravity(pm, pd, pq)

    def pin_all():
        pin_mcg()
        for k in range(pm.nv):
            pin.computeCoriolisMatrix(pm, pd, pq, units[k])

    return pin_mcg, pin_all


def all_terms_cases(name, model, oracle, against_mcg=False):
    """all_terms with the bounds, without and with Gamma, against Pinocchio's
    route to the same numbers (and, ``against_mcg``, against its M + C + g
    alone, the humanoids' target); our M + C + g against its own."""
    q, v, pq, pv = state(model, oracle)
    pin_mcg, pin_all = pinocchio_routes(oracle, pq, pv)
    fill_global_constant(model)
    terms = rd.all_terms(model, q, v, christoffel=False)
    assert np.allclose(terms.mass_matrix, oracle.mass_matrix(q), atol=1e-10)

    def ours_mcg():
        rd.mass_matrix(model, q)
        rd.coriolis_matrix(model, q, v)
        rd.gravity_torques(model, q)

    bounds = lambda: rd.all_terms(model, q, v, christoffel=False)  # noqa: E731
    cases = [(f"{name} all_terms, bounds, no Gamma", {"ours": bounds, "pin": pin_all})]
    if against_mcg:
        cases.append((f"{name} all_terms, bounds, no Gamma vs pin M+C+g",
                      {"ours": bounds, "pin": pin_mcg}))
    cases += [(f"{name} all_terms with Gamma", {"ours": lambda: rd.all_terms(model, q, v),
                                                "pin": pin_all}),
              (f"{name} M + C + g", {"ours": ours_mcg, "pin": pin_mcg})]
    return cases


def fill_global_constant(model):
    """K_c's first bound, computed once per model (issue 10's business,
    seconds to minutes): done before timing, so what is timed is the
    per-sample work."""
    rd.coriolis_bounds(model, np.zeros((0, model.nq)), np.zeros((0, model.nv)))


def random_floating_tree(joints, seed):
    """A random tree of ``joints`` revolute joints on a floating base, and its oracle."""
    return floating_tree(random_parents(joints, seed), seed)


def floating_tree(parents, seed=1):
    """The tree of revolute joints ``parents`` (``common.topology_urdf``, random
    axes and inertias) on a floating base, and its oracle."""
    urdf = topology_urdf(parents, seed)
    model = rd.load_urdf(urdf, base="floating")
    oracle = PinocchioOracle(load_pinocchio(urdf, free_flyer=True), model.joint_names)
    return model, oracle


def humanoid_parents(waist):
    """The joint tree of a humanoid with five-finger hands: two legs of 6
    joints and a waist chain of ``waist`` joints on the base, an arm of 7
    on the waist's last, and on each wrist a hand as Inspire's: a thumb
    chain of 4 and four fingers of 2 (G1: waist 3, 53 joints; H1-2: 1, 51)."""
    parents = []

    def chain(start, length):
        for _ in range(length):
            parents.append(start)
            start = len(parents) - 1
        return start

    chain(-1, 6)
    chain(-1, 6)
    torso = chain(-1, waist)
    for _ in range(2):
        wrist = chain(torso, 7)
        chain(wrist, 4)
        for _ in range(4):
            chain(wrist, 2)
    return parents


def random_parents(joints, seed):
    """A humanoid-like random tree: each joint hangs off a random earlier one
    (or the root), chains preferred, so the depth grows like log of the size."""
    rng = np.random.default_rng(seed)
    return [-1 if i == 0 else int(rng.integers(-1, i)) if rng.random() < 0.3 else i - 1
            for i in range(joints)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--only-all-terms", action="store_true",
                        help="leave out the M, C, g of solo12 and talos")
    args = parser.parse_args()
    print(f"Per call, median of {args.rounds} paired rounds of {args.calls} calls "
          "(xR = median per-round ratio to Pinocchio)")
    cases = []
    if not args.only_all_terms:
        for name in ("solo12", "talos_full_v2"):
            for base in ("fixed", "floating"):
                cases += mcg_cases(name, base)
    for name, hands in (("g1_29dof_rev_1_0", False), ("talos_full_v2", False), ("romeo", True),
                        ("g1_29dof_with_hand_rev_1_0", True)):
        cases += all_terms_cases(name, *robot(name, "floating"), against_mcg=hands)
    for name, waist in (("g1 with five-finger hands", 3), ("h1_2 with five-finger hands", 1)):
        cases += all_terms_cases(name, *floating_tree(humanoid_parents(waist)), against_mcg=True)
    for joints in (30, 60):
        cases += all_terms_cases(f"random tree {joints}", *random_floating_tree(joints, joints),
                                 against_mcg=True)
    for label, calls in cases:
        report(label, paired_rounds(calls, args.rounds, args.calls))


if __name__ == "__main__":
    main()
