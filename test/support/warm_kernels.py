"""Compile the kernels most tests share into numba's cache, one kind of
model per process: ``python warm_kernels.py fixed`` (panda), ``... floating``
(solo12 on a free-flyer).

The root conftest.py runs both at the start of a session, side by side, so
that a cold cache (a fresh clone) is filled once on both cores, instead of
by the first test of each worker and each node process that needs a kernel,
several at a time. Every public function, one sample and a batch, float64,
from a wide frame, as the install compiles (``precompile.on_a_wide_stack``).
"""
import sys

import numpy as np
from robots import example_robot_urdf, urdf_text

from robot_dynamics_ros.dynamics import (all_terms, christoffel_symbols, coriolis_bounds, coriolis_matrix,
                                         forward_dynamics, gravity_torques, inverse_dynamics, load_urdf,
                                         mass_matrix)
from robot_dynamics_ros.dynamics.precompile import on_a_wide_stack

ROBOTS = {"fixed": ("panda", "fixed"), "floating": ("solo12", "floating")}


def warm(kind: str):
    name, base = ROBOTS[kind]
    model = load_urdf(urdf_text(example_robot_urdf(name)), base=base)
    rng = np.random.default_rng(0)
    q = np.zeros(model.nq)
    if base == "floating":
        q[6] = 1.0  # the identity quaternion (x, y, z, w)
    for qs in (q, np.tile(q, (3, 1))):
        vs = rng.uniform(-1, 1, qs.shape[:-1] + (model.nv,))
        taus = inverse_dynamics(model, qs, vs, vs)
        mass_matrix(model, qs)
        gravity_torques(model, qs)
        coriolis_matrix(model, qs, vs)
        christoffel_symbols(model, qs)
        coriolis_bounds(model, qs, vs)
        for method in ("recursive", "cholesky"):
            forward_dynamics(model, qs, vs, taus, method=method)
        for christoffel in (False, True):
            all_terms(model, qs, vs, christoffel=christoffel)


if __name__ == "__main__":
    on_a_wide_stack(warm, sys.argv[1])
