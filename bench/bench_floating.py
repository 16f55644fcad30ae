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
- g1 (29 joints, nv = 35) floating: ``all_terms`` (M, C, g, Gamma and the
  bounds) against Pinocchio's crba, computeCoriolisMatrix,
  computeGeneralizedGravity and Gamma as nv calls of
  ``computeCoriolisMatrix(q, e_k)``; and without Gamma, our mass_matrix,
  coriolis_matrix and gravity_torques against Pinocchio's first three.
  ``all_terms`` also reports K_c, which the model computes once (a search
  over the joint limits, issue 10's business, minutes for 29 joints): it
  is filled in beforehand, so what is timed is the per-sample work.
"""
import argparse
import os
import sys

import numpy as np
import pinocchio as pin

sys.path.insert(0, os.path.dirname(__file__))
from bench_dynamics import paired_rounds, report  # noqa: E402
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


def all_terms_cases(name):
    model, oracle = robot(name, "floating")
    pm, pd = oracle.model, oracle.data
    q, v, pq, pv = state(model, oracle)
    units = np.eye(pm.nv)

    def pin_mcg():
        pin.crba(pm, pd, pq)
        pin.computeCoriolisMatrix(pm, pd, pq, pv)
        pin.computeGeneralizedGravity(pm, pd, pq)

    def pin_all():
        pin_mcg()
        for k in range(pm.nv):
            pin.computeCoriolisMatrix(pm, pd, pq, units[k])

    def ours_mcg():
        rd.mass_matrix(model, q)
        rd.coriolis_matrix(model, q, v)
        rd.gravity_torques(model, q)

    return [(f"{name} floating all_terms (with Gamma)",
             {"ours": lambda: rd.all_terms(model, q, v), "pin": pin_all}),
            (f"{name} floating M + C + g (without Gamma)", {"ours": ours_mcg, "pin": pin_mcg})]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--calls", type=int, default=20)
    args = parser.parse_args()
    print(f"Per call, median of {args.rounds} paired rounds of {args.calls} calls "
          "(xR = median per-round ratio to Pinocchio)")
    cases = []
    for name in ("solo12", "talos_full_v2"):
        for base in ("fixed", "floating"):
            cases += mcg_cases(name, base)
    cases += all_terms_cases("g1_29dof_rev_1_0")
    for label, calls in cases:
        report(label, paired_rounds(calls, args.rounds, args.calls))


if __name__ == "__main__":
    main()
