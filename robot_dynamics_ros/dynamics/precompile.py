"""Compile into the kernel cache (``kernel_cache``) what a node's first
output runs, so that no start after the install waits for numba.

    python -m robot_dynamics_ros.dynamics.precompile

The install runs it (setup.py's build, CMakeLists.txt's install step); run it
again in a container image after installing the package, with
``ROBOT_DYNAMICS_KERNEL_CACHE`` set to where the image keeps the cache when
the package's folder will be read-only (README, "Start-up").

The kernels' argument types do not depend on the robot (arrays of a given
precision and the model's records, ``model.records``), so one small model of
each shape compiles what every robot of that shape runs: the embedded PUMA
(a chain), a fixed tree and a floating tree. For each it does what the node
does before its first output (``messages.outputs.compute_first_outputs``):
every term with and without the Christoffel symbols, with the model's first
K_c bound, and the same with a frame's pose, Jacobian and J̇v
(``state_terms``, what a node with the ``frames`` parameter runs). Two
processes compile side by side (``os.fork``), the fixed bases and the
floating base's frame kernels in one and the rest of the floating base in
the other (``SHAPES``); numba writes each kernel's cache file whole (to a
temporary name, then renamed), so the two may compile the same kernel
without harm.
"""

import os
import sys
import time
import traceback

import numpy as np

from . import all_terms, frame_terms, load_urdf, puma_urdf, state_terms
from .kernel_cache import KernelCacheLocator


def tree_urdf() -> str:
    """A small tree: a base with two branches of two revolute joints, each
    ending in a fixed tool link, the shape of a humanoid's or a quadruped's
    limbs."""
    def link(name, mass):
        return (f'<link name="{name}"><inertial><mass value="{mass}"/><origin xyz="0 0 0.1"/>'
                f'<inertia ixx="0.02" ixy="0" ixz="0" iyy="0.02" iyz="0" izz="0.01"/></inertial></link>')

    def joint(name, parent, child, kind="revolute", xyz="0 0 0.2", axis="0 1 0"):
        limit = '<limit lower="-2" upper="2" effort="100" velocity="5"/>' if kind == "revolute" else ""
        return (f'<joint name="{name}" type="{kind}"><parent link="{parent}"/><child link="{child}"/>'
                f'<origin xyz="{xyz}"/><axis xyz="{axis}"/>{limit}</joint>')

    parts = [link("base", 5.0)]
    for side, y in (("left", 0.2), ("right", -0.2)):
        parts += [link(f"{side}_upper", 1.0), link(f"{side}_lower", 0.8), link(f"{side}_tool", 0.1),
                  joint(f"{side}_hip", "base", f"{side}_upper", xyz=f"0 {y} 0", axis="1 0 0"),
                  joint(f"{side}_knee", f"{side}_upper", f"{side}_lower"),
                  joint(f"{side}_tool_joint", f"{side}_lower", f"{side}_tool", kind="fixed")]
    return f'<robot name="precompile_tree">{"".join(parts)}</robot>'


def state(model):
    """A joint state to compile with: q at zero (a floating base upright at
    the origin), qd drawn once."""
    q = np.zeros(model.nq)
    if model.floating:
        q[3:7] = (0.0, 0.0, 0.0, 1.0)  # the base's orientation: x, y, z, w
    return q, np.random.default_rng(0).uniform(-1.0, 1.0, model.nv)


def first_outputs(model, frame: str):
    """What the node computes for a model before its first output."""
    q, qd = state(model)
    for christoffel in (False, True):
        all_terms(model, q, qd, christoffel=christoffel)
    state_terms(model, q, qd, (frame,))


def frame_kernels(model, frame: str):
    """A frame's kernels (``frame_terms``): the functions of ``frames`` that
    ``all_terms``' kernel calls, with the same types, typed last of its
    callees when that kernel compiles."""
    frame_terms(model, *state(model), (frame,))


# The three shapes whose records differ in type (``model.records``: a dense
# Gamma, a fixed tree's slices, a floating base), in two halves of about
# equal compile time: a floating tree's kernels take about as long as the
# other two shapes' together, so the first half also compiles the floating
# tree's frame kernels, after the chain (when the second half has made the
# floating record's constructors) and long before the second half's
# ``all_terms`` reaches them, which then loads them from the cache.
SHAPES = (
    ((first_outputs, puma_urdf, "fixed", "link6"), (frame_kernels, tree_urdf, "floating", "right_tool"),
     (first_outputs, tree_urdf, "fixed", "left_tool")),
    ((first_outputs, tree_urdf, "floating", "right_tool"),),
)


def compile_shapes(shapes):
    for compile_for, urdf, base, frame in shapes:
        on_a_wide_stack(compile_for, load_urdf(urdf(), base=base), frame)


# Local variables of the frame ``on_a_wide_stack`` calls from: 8 bytes each,
# so that its frame needs just over 256 KiB of the data stack and takes a
# chunk of 512 KiB (CPython rounds a chunk up to a power of two), which
# leaves about 190 KiB for the frames of the calls under it.
WIDE_FRAME_SLOTS = 40_000
_wide_frame_call = None


def on_a_wide_stack(function, *args):
    """``function(*args)``, called from a frame so wide that the calls under
    it, numba's compile of a kernel and its callees, all fit in one chunk
    of CPython's data stack.

    CPython 3.11 keeps the frames of Python calls in chunks of 16 KiB and
    frees a chunk as soon as the call that needed it returns, so a
    recursion that goes back and forth across a chunk's end, as numba's
    type inference does, maps and unmaps memory on most calls
    (python/cpython#142183, "Calls across stack chunks perform badly"; the
    3.13 and 3.14 branches now keep one chunk). Under this frame it does
    not: the compile's system time all but goes (docs/benchmarks.md, "The
    node after an install")."""
    global _wide_frame_call
    if _wide_frame_call is None:
        names = ", ".join(f"_{i}" for i in range(WIDE_FRAME_SLOTS))
        scope = {}
        exec(f"def call(function, *args):\n    if 0:\n        {names} = (None,) * {WIDE_FRAME_SLOTS}\n"
             f"    return function(*args)\n", scope)
        _wide_frame_call = scope["call"]
    return _wide_frame_call(function, *args)


def main() -> int:
    start = time.monotonic()
    print(f"robot_dynamics_ros: compiling the kernels into {KernelCacheLocator.folder or 'the cache'} ...",
          flush=True)
    child = os.fork() if hasattr(os, "fork") else None
    if child == 0:
        status = 1
        try:
            compile_shapes(SHAPES[1])
            status = 0
        except Exception:  # the parent reports it
            traceback.print_exc()
        finally:
            os._exit(status)
    compile_shapes(SHAPES[0] if child else SHAPES[0] + SHAPES[1])
    failed = bool(child) and os.waitstatus_to_exitcode(os.waitpid(child, 0)[1]) != 0
    print(f"robot_dynamics_ros: kernels compiled into {KernelCacheLocator.folder} in "
          f"{time.monotonic() - start:.0f} s", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
