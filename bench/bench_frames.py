"""A frame's pose, Jacobian and acceleration bias against Pinocchio's.

    PYTHONPATH=$PWD python bench/bench_frames.py [--rounds 300] [--calls 50] [--batch 2000]

Per call, one frame (panda_hand_tcp on the panda and tool0 on the ur5, both
links merged into the last body by fixed joints): each quantity's calls from
the two libraries run back to back in a shuffled order, ``--calls`` calls
each, over ``--rounds`` short rounds; the figure is the median over rounds
of the per-round ratio to Pinocchio, with the median microseconds beside it
(bench_dynamics.paired_rounds). Pinocchio's routes are what a user of it
calls for the same numbers, LOCAL_WORLD_ALIGNED:

- pose: ``forwardKinematics(q)`` and ``updateFramePlacement``;
- J: ``computeFrameJacobian(q)``;
- J̇v: ``forwardKinematics(q, v, 0)`` and ``getFrameClassicalAcceleration``;
- J and J̇v: ``computeFrameJacobian`` and the two calls of J̇v, against our
  ``frame_jacobian`` and ``frame_jacobian_dot_v``, and against our one call
  ``frame_terms``, which also gives the pose (the target: at most
  Pinocchio's).

Batch: ``--batch`` states in one call of ours against a Python loop over
Pinocchio's, per sample (wall time; the batch runs on the thread pool).
"""
import argparse
import os
import random
import sys

import numpy as np
import pinocchio as pin

sys.path.insert(0, os.path.dirname(__file__))
from bench_dynamics import paired_rounds, report  # noqa: E402
from common import robot_pair  # noqa: E402

from robot_dynamics_ros import dynamics as rd  # noqa: E402

FRAMES = {"panda": "panda_hand_tcp", "ur5": "tool0"}
WORLD = pin.LOCAL_WORLD_ALIGNED


def cases(name):
    """(label, {library: call}) for the frame of robot ``name``."""
    model, pmodel, pdata = robot_pair(name)
    frame = FRAMES[name]
    fid = pmodel.getFrameId(frame, pin.BODY)
    q, v = np.random.default_rng(0).uniform(-1, 1, (2, model.nv))
    zero = np.zeros(model.nv)
    frames = (frame,)

    def pin_pose():
        pin.forwardKinematics(pmodel, pdata, q)
        return pin.updateFramePlacement(pmodel, pdata, fid)

    def pin_bias():
        pin.forwardKinematics(pmodel, pdata, q, v, zero)
        return pin.getFrameClassicalAcceleration(pmodel, pdata, fid, WORLD)

    def pin_both():
        pin.computeFrameJacobian(pmodel, pdata, q, fid, WORLD)
        pin_bias()

    def ours_both():
        rd.frame_jacobian(model, q, frame)
        rd.frame_jacobian_dot_v(model, q, v, frame)

    # the same numbers, or the timings compare different things
    pin.computeJointJacobians(pmodel, pdata, q)
    assert np.allclose(rd.frame_placement(model, q, frame), pin_pose().homogeneous, atol=1e-12)
    assert np.allclose(rd.frame_jacobian(model, q, frame),
                       pin.computeFrameJacobian(pmodel, pdata, q, fid, WORLD), atol=1e-12)
    assert np.allclose(rd.frame_jacobian_dot_v(model, q, v, frame), pin_bias().vector, atol=1e-12)
    return [
        ("pose", {"ours": lambda: rd.frame_placement(model, q, frame), "pin": pin_pose}),
        ("J", {"ours": lambda: rd.frame_jacobian(model, q, frame),
               "pin": lambda: pin.computeFrameJacobian(pmodel, pdata, q, fid, WORLD)}),
        ("J̇v", {"ours": lambda: rd.frame_jacobian_dot_v(model, q, v, frame), "pin": pin_bias}),
        ("J and J̇v", {"ours": ours_both, "pin": pin_both}),
        # one call of ours for the pose, J and J̇v, as the node makes it
        ("frame_terms (pose, J, J̇v)", {"ours": lambda: rd.frame_terms(model, q, v, frames), "pin": pin_both}),
    ]


def batch_cases(name, count):
    model, pmodel, pdata = robot_pair(name)
    frame = FRAMES[name]
    fid = pmodel.getFrameId(frame, pin.BODY)
    Q, V = np.random.default_rng(1).uniform(-1, 1, (2, count, model.nv))
    zero = np.zeros(model.nv)

    def pin_loop():
        for q, v in zip(Q, V):
            pin.computeFrameJacobian(pmodel, pdata, q, fid, WORLD)
            pin.forwardKinematics(pmodel, pdata, q, v, zero)
            pin.getFrameClassicalAcceleration(pmodel, pdata, fid, WORLD)

    def ours():
        rd.frame_jacobian(model, Q, frame)
        rd.frame_jacobian_dot_v(model, Q, V, frame)

    return {"ours": ours, "pin": pin_loop}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--batch", type=int, default=2000)
    args = parser.parse_args()
    random.seed(0)
    print(f"Per call, median of {args.rounds} paired rounds of {args.calls} calls "
          "(xR = median per-round ratio to Pinocchio)")
    for name in FRAMES:
        for label, calls in cases(name):
            report(f"{name} {FRAMES[name]} {label}", paired_rounds(calls, args.rounds, args.calls))
    print(f"Batch of {args.batch}, J and J̇v, per sample (wall)")
    for name in FRAMES:
        times = paired_rounds(batch_cases(name, args.batch), 7, 1)
        report(f"{name} batch J and J̇v", {k: np.array(t) / args.batch for k, t in times.items()})


if __name__ == "__main__":
    main()
