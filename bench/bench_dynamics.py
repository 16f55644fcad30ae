"""Every dynamics function against Pinocchio (and MuJoCo where it has the quantity).

    python bench/bench_dynamics.py [--rounds 300] [--calls 50] [--batch 10000]

Per call: each quantity's calls from every library run back to back in a
shuffled order, ``--calls`` calls each, over ``--rounds`` short rounds; the
figure is the median over rounds of the per-round ratio to Pinocchio (the
load of a shared machine comes in bursts, and a burst hits all libraries of
a round alike), with the median microseconds beside it. Pinocchio's Gamma
is n calls of ``computeCoriolisMatrix(q, e_k)``; its "all terms" are crba,
computeCoriolisMatrix, computeGeneralizedGravity and those n calls. MuJoCo
loads the same URDF without meshes; its M is mj_kinematics, mj_comPos,
mj_crb and mj_fullM, its g mj_rne at rest, its inverse dynamics mj_inverse.

Batch: N configurations on ONE core (the process pins itself with
``os.sched_setaffinity`` before the package is imported, so the thread pool
has one thread), against a Python loop over Pinocchio; wall and CPU time
per sample, again as the median of paired rounds. Then the cold and warm
start (empty and filled numba cache).
"""
import argparse
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

if __name__ == "__main__" and "--one-core" in sys.argv:
    os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})

import pinocchio as pin  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
from common import ROBOTS, robot_pair  # noqa: E402
from robots import example_robot_urdf  # noqa: E402

from robot_dynamics_ros import dynamics as rd  # noqa: E402


def mujoco_model(path):
    """MuJoCo's model of a URDF with visuals and collisions removed, or None."""
    try:
        import mujoco
    except ImportError:
        print("(MuJoCo not installed: its columns are left out)")
        return None
    text = open(path).read()
    text = re.sub(r"<(visual|collision)\b.*?</\1>", "", text, flags=re.S)
    text = text.replace("</robot>", '<mujoco><compiler discardvisual="true" '
                        'fusestatic="false" balanceinertia="false"/></mujoco></robot>')
    model = mujoco.MjModel.from_xml_string(text)
    model.opt.gravity[:] = (0.0, 0.0, -9.81)
    return mujoco, model, mujoco.MjData(model)


def per_call_cases(name):
    """(label, {library: call}) for every quantity on robot ``name``."""
    model, pmodel, pdata = robot_pair(name)
    rng = np.random.default_rng(0)
    q, qd, qdd = rng.uniform(-1, 1, (3, model.nv))
    n = model.nv
    units = np.eye(n)

    def pin_gamma():
        for k in range(n):
            pin.computeCoriolisMatrix(pmodel, pdata, q, units[k])

    def pin_all():
        pin.crba(pmodel, pdata, q)
        pin.computeCoriolisMatrix(pmodel, pdata, q, qd)
        pin.computeGeneralizedGravity(pmodel, pdata, q)
        pin_gamma()

    cases = [
        ("M", {"ours": lambda: rd.mass_matrix(model, q), "pin": lambda: pin.crba(pmodel, pdata, q)}),
        ("g", {"ours": lambda: rd.gravity_torques(model, q),
               "pin": lambda: pin.computeGeneralizedGravity(pmodel, pdata, q)}),
        ("inverse dynamics", {"ours": lambda: rd.inverse_dynamics(model, q, qd, qdd),
                              "pin": lambda: pin.rnea(pmodel, pdata, q, qd, qdd)}),
        ("C", {"ours": lambda: rd.coriolis_matrix(model, q, qd),
               "pin": lambda: pin.computeCoriolisMatrix(pmodel, pdata, q, qd)}),
        ("forward dynamics", {"ours": lambda: rd.forward_dynamics(model, q, qd, qdd),
                              "pin": lambda: pin.aba(pmodel, pdata, q, qd, qdd)}),
        ("Gamma", {"ours": lambda: rd.christoffel_symbols(model, q), "pin": pin_gamma}),
        ("all_terms", {"ours": lambda: rd.all_terms(model, q, qd), "pin": pin_all}),
    ]
    peer = mujoco_model(example_robot_urdf(ROBOTS[name]))
    if peer is not None:
        mujoco, mmodel, mdata = peer
        assert mmodel.nv == n, (name, mmodel.nv, n)
        full = np.empty((n, n))
        mdata.qpos[:], mdata.qvel[:], mdata.qacc[:] = q, qd, qdd

        def mj_mass():
            mujoco.mj_kinematics(mmodel, mdata)
            mujoco.mj_comPos(mmodel, mdata)
            mujoco.mj_crb(mmodel, mdata)
            mujoco.mj_fullM(mmodel, mdata, full)

        rest = np.zeros(n)

        def mj_gravity():
            mujoco.mj_kinematics(mmodel, mdata)
            mujoco.mj_comPos(mmodel, mdata)
            mujoco.mj_rne(mmodel, mdata, 0, rest)

        mj_mass()
        # the same robot: M agrees with ours (MuJoCo's URDF import keeps the inertias)
        print(f"  {name}: MuJoCo M vs ours, max |difference| "
              f"{np.abs(full - rd.mass_matrix(model, q)).max():.1e}")
        cases[0][1]["mujoco"] = mj_mass
        cases[1][1]["mujoco"] = mj_gravity
        cases[2][1]["mujoco"] = lambda: mujoco.mj_inverse(mmodel, mdata)
    return cases


def paired_rounds(calls, rounds, number, clock=time.perf_counter):
    """{library: [per-call time of each round]}: libraries shuffled per round."""
    for fn in calls.values():
        fn()
    times = {lib: [] for lib in calls}
    order = list(calls)
    for _ in range(rounds):
        random.shuffle(order)
        for lib in order:
            fn = calls[lib]
            start = clock()
            for _ in range(number):
                fn()
            times[lib].append((clock() - start) / number)
    return times


def report(label, times, scale=1e6):
    base = np.array(times["pin"])
    cells = []
    for lib in ("ours", "mujoco"):
        if lib in times:
            ratio = statistics.median(np.array(times[lib]) / base)
            cells.append(f"{lib} {statistics.median(times[lib]) * scale:8.3f} us  x{ratio:5.2f}")
    print(f"  {label:<34} pin {statistics.median(times['pin']) * scale:8.3f} us   " + "   ".join(cells))


def per_call(args):
    print(f"Per call, median of {args.rounds} paired rounds of {args.calls} calls "
          "(xR = median per-round ratio to Pinocchio)")
    for name in ROBOTS:
        for label, calls in per_call_cases(name):
            report(f"{name} {label}", paired_rounds(calls, args.rounds, args.calls))


def batch(args):
    print(f"Batch of {args.batch} on one core (affinity {sorted(os.sched_getaffinity(0))}), "
          "per sample: wall, and CPU time (process_time)")
    for name in ROBOTS:
        model, pmodel, pdata = robot_pair(name)
        rng = np.random.default_rng(1)
        Q, QD, QDD = rng.uniform(-1, 1, (3, args.batch, model.nv))
        cases = (
            ("M", lambda: rd.mass_matrix(model, Q), lambda: [pin.crba(pmodel, pdata, q) for q in Q]),
            ("g", lambda: rd.gravity_torques(model, Q),
             lambda: [pin.computeGeneralizedGravity(pmodel, pdata, q) for q in Q]),
            ("inverse dynamics", lambda: rd.inverse_dynamics(model, Q, QD, QDD),
             lambda: [pin.rnea(pmodel, pdata, q, qd, qdd) for q, qd, qdd in zip(Q, QD, QDD)]),
            ("C", lambda: rd.coriolis_matrix(model, Q, QD),
             lambda: [pin.computeCoriolisMatrix(pmodel, pdata, q, qd) for q, qd in zip(Q, QD)]),
        )
        for label, ours, theirs in cases:
            for clock, what in ((time.perf_counter, "wall"), (time.process_time, "cpu")):
                times = paired_rounds({"ours": ours, "pin": theirs}, 7, 1, clock)
                report(f"{name} batch {label} ({what})",
                       {k: np.array(v) / args.batch for k, v in times.items()})


START = """
import time, numpy as np
t0 = time.perf_counter()
from robot_dynamics_ros.dynamics import load_urdf, mass_matrix, gravity_torques, inverse_dynamics
m = load_urdf({path!r})
q = np.zeros(m.nv)
mass_matrix(m, q); gravity_torques(m, q); inverse_dynamics(m, q, q, q)
mass_matrix(m, np.zeros((100, m.nv)))
print(time.perf_counter() - t0)
"""


def start_times():
    """Cold (empty numba cache) and warm start of import + first calls."""
    code = START.format(path=example_robot_urdf(ROBOTS["panda"]))
    cache = tempfile.mkdtemp(prefix="numba-cache-")
    env = dict(os.environ, ROBOT_DYNAMICS_KERNEL_CACHE=cache)
    try:
        times = [float(subprocess.run([sys.executable, "-c", code], env=env, check=True,
                                      capture_output=True, text=True).stdout)
                 for _ in range(2)]
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    print(f"Start: cold (empty numba cache) {times[0]:.2f} s, warm {times[1]:.2f} s")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--batch", type=int, default=10_000)
    parser.add_argument("--one-core", action="store_true",
                        help="(internal) run the batch part pinned to one core")
    args = parser.parse_args()
    random.seed(0)
    if args.one_core:
        batch(args)
        return
    per_call(args)
    sys.stdout.flush()
    subprocess.run([sys.executable, __file__, "--one-core", "--batch", str(args.batch)], check=True)
    start_times()


if __name__ == "__main__":
    main()
