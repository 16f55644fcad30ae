"""What the compiled kernels see: the model and its work arrays as two records.

As in Pinocchio, the model (``ModelRecord``: tree, joint geometry, inertias,
gravity) is separate from the data (``Data``: one named array per
intermediate quantity, allocated once per model, thread and precision).
Every kernel takes ``(model, data, inputs..., outputs...)`` and reads fields
by name, so a new model field is added here and in ``model_record`` only.

Both are numba structrefs: a structref crosses from Python into compiled code
as one pointer, where loose arrays are unboxed one by one on every call, and
every field keeps its own name and shape. A ``Data`` holds its model's record,
so the kernels that Python calls take one of them: ``kernel(data, ...)``, and
the algorithms inside ``f(model, data, ...)``. With ``NUMBA_DISABLE_JIT=1`` the
kernels run as plain Python and the records are plain namespaces with the
same fields.
"""
from types import SimpleNamespace

import numba
import numpy as np
from numba.core import types
from numba.core.typing.typeof import Purpose
from numba.experimental import structref

from .inertia import pack_inertia, subtree_holds_mass, unpack_inertia

# The slice layout of Gamma (``slices.SliceLayout``): integer arrays, int64.
SLICE_FIELDS = ("slice_local", "slice_start", "slice_row", "slice_col", "group_size",
                "group_count", "group_offset")
MODEL_FIELDS = ("parent", "joint_type", "placement_rotation", "placement_translation",
                "inertia", "holds_mass", "gravity", *SLICE_FIELDS, "floating", "dense_slices")

# One row per body unless noted. Kinematics: world pose (rot, pos), joint
# motion subspace S, body inertia I and composite inertia Ic, both as the
# 10 parameters of ``spatial.inertia_times`` about the world origin.
# Recursions: velocity v, acceleration a, force f, rate of the joint axis Sd,
# composite Coriolis factor Bc (6 x 6); articulated bodies: velocity-product
# acceleration c, bias force pA, U = IA S, articulated inertia IA (6 x 6),
# pivots D and u; Christoffel symbols after Safeea et al.: world CoM com and
# L = tr(I) 1 - 2 I. Scratch 6-vectors and 6 x 6 matrices for one body at a
# time. The slices of Gamma as blocks (``slices``), and their Gram matrices;
# the n x n matrices of the bounds (n = nv), C's Gram matrix in gram and M
# in eig_work (``bounds.tree_bound_values``), the Householder vectors of one
# reduction (``eigen.tridiagonalize_one``), a floating base's iteration vectors
# and a transposed slice (``subspace``),
# the motion subspaces about the base, their sums along the tree, a Cholesky
# factor, the rows of a slice's core and the cores' frames (``cores``),
# the n + 2 matrices of the dense bounds from a whole Gamma
# (``bounds.bound_values``; a tree's Lanczos vectors, ``lanczos``), the
# rows and columns that hold mass, the small cores reduced side by side
# with their sizes (``LOCKSTEP_CORE``), and the cores' tridiagonal forms,
# whose eigenvalues are searched side by side (``eigen.tridiagonal_bands``).
# Frames (none but in a Data made for them, ``terms.state_terms``): each
# one's body and placement in it (``frames.frame_of``), and where
# ``all_terms``' kernel writes its pose, Jacobian and J̇v.
DATA_SHAPES = {
    "rot": ("nb", 3, 3), "pos": ("nb", 3), "S": ("nb", 6), "I": ("nb", 10), "Ic": ("nb", 10),
    "v": ("nb", 6), "a": ("nb", 6), "f": ("nb", 6), "Sd": ("nb", 6), "Bc": ("nb", 6, 6),
    "c": ("nb", 6), "pA": ("nb", 6), "U": ("nb", 6), "IA": ("nb", 6, 6),
    "D": ("nb",), "u": ("nb",),
    "com": ("nb", 3), "L": ("nb", 3, 3),
    "f1": (6,), "f2": (6,), "f3": (6,), "h": (6,), "t": (6,),
    "B": (6, 6), "I6": (6, 6),
    "coriolis": ("nv", "nv"), "gram": ("nv", "nv"), "eig_work": ("nv", "nv"),
    "blocks": ("blocks",), "block_grams": ("blocks",), "householder": (2, "nv"),
    "iterates": ("nb+6", "nb"),
    "shifted": ("nb", 6), "spans": ("nb", 6, 6), "factor": (6, 6), "basis": ("nb", 6),
    "core_frames": ("nb", 6, 6),
    "core_rows": (6, "nb"),
    "grams": ("nv", "nv", "nv+2"),
    "kept": ("nb",),
    "lockstep": (2, "lockstep"), "lockstep_sizes": ("nb",), "bands": (2, "nv", "nb"),
    "frame_body": ("frames",), "frame_placement": ("frames", 3, 4), "frame_pose": ("frames", 7),
    "frame_jacobian": ("frames", 6, "nb"), "frame_bias": ("frames", 6),
}
# The frames' arrays, in the order ``new_data`` takes them from ``terms.state_terms``
FRAME_FIELDS = ("frame_body", "frame_placement", "frame_pose", "frame_jacobian", "frame_bias")
# Work arrays of indices (int64), the others of the data's precision: the
# rows and columns of a matrix that hold mass (``bounds.massive_speeds``) and
# the sizes of the cores reduced side by side.
INDEX_ARRAYS = ("kept", "lockstep_sizes", "frame_body")
# A floating tree's cores of up to this size (a limb and the base) are
# reduced side by side, each in a corner of a lane as large as the largest
# of them: in lockstep and lockstep_sizes, the cores and their Gram matrices
# (``bounds.core_slice_norms``).
LOCKSTEP_CORE = 12


@structref.register
class ModelRecordType(types.StructRef):
    def preprocess_fields(self, fields):
        return tuple((name, types.unliteral(kind)) for name, kind in fields)


@structref.register
class DataType(types.StructRef):
    def preprocess_fields(self, fields):
        return tuple((name, types.unliteral(kind)) for name, kind in fields)


class ModelRecord(structref.StructRefProxy):
    """The compiled model: ``MODEL_FIELDS`` (see ``Model``)."""


class Data(structref.StructRefProxy):
    """The work arrays of one thread (``DATA_SHAPES``) and its ``model``."""


structref.define_proxy(ModelRecord, ModelRecordType, list(MODEL_FIELDS))
structref.define_proxy(Data, DataType, ["model", *DATA_SHAPES])


# The constructors, compiled once per machine: numba's own (``ModelRecord(...)``
# from Python) cannot be cached and is compiled again in every process.
@numba.njit(cache=True)
def _new_model_record(*fields):
    return ModelRecord(*fields)


@numba.njit(cache=True)
def _new_data(*fields):
    return Data(*fields)


def _record(proxy, fields):
    if numba.config.DISABLE_JIT:
        return SimpleNamespace(**fields)
    return (_new_model_record if proxy is ModelRecord else _new_data)(*fields.values())


def model_record(model, dtype):
    """The ``ModelRecord`` of a ``Model`` in float64 or float32 (its fields:
    ``model_fields``)."""
    return _record(ModelRecord, model_fields(model, dtype))


def model_fields(model, dtype):
    """The fields of ``model_record(model, dtype)``, by name.

    The kernels' body frames are the URDF joint frames turned so that each
    joint axis is their z axis (``axis_frame``): a joint then turns or
    slides its body about or along z, whatever its axis, and the kernels
    need no axis at all. Placements and inertias are re-expressed in these
    frames here, once per model; ``Model`` keeps the URDF's frames. The six
    bodies of a floating base keep the root link's axes (the kernels place
    them by q's base pose, ``kinematics.body_poses``), with the free-flyer's
    placement in the world as body 0's (``Model.joint_placement``).
    Copies: the kernels get contiguous arrays of their precision that no
    caller can change. ``floating`` is True, or None for a fixed base: a
    type rather than a value, so every kernel is compiled apart for the two
    and a fixed-base kernel holds no floating-base branch at all
    (``kinematics.is_floating``); ``dense_slices`` likewise, True when
    Gamma's blocks are the dense tensor (``christoffel.dense_layout``).
    ``holds_mass``: 1 where a body's subtree holds mass, 0 where its joint
    moves nothing (``inertia.subtree_holds_mass``).
    """
    layout = model.slice_layout
    frames = np.array([np.eye(3) if i < model.base_bodies else axis_frame(axis)
                       for i, axis in enumerate(model.joint_axis)]).reshape(model.nb, 3, 3)
    rotation = np.empty((model.nb, 3, 3))
    translation = np.empty((model.nb, 3))
    inertia = np.empty((model.nb, 10))
    for i, p in enumerate(model.parent):
        to_parent = frames[p].T if p >= 0 else np.eye(3)
        rotation[i] = to_parent @ model.joint_placement[i, :3, :3] @ frames[i]
        translation[i] = to_parent @ model.joint_placement[i, :3, 3]
        mass, com, inertia_c = unpack_inertia(model.inertia[i])
        inertia[i] = pack_inertia(mass, frames[i].T @ com, frames[i].T @ inertia_c @ frames[i])
    fields = {"parent": np.array(model.parent, dtype=np.int64),
              "joint_type": np.array(model.joint_type, dtype=np.int64),
              "placement_rotation": rotation, "placement_translation": translation,
              "inertia": inertia, "holds_mass": subtree_holds_mass(model.parent, model.inertia),
              "gravity": model.gravity,
              **{name: getattr(layout, name.removeprefix("slice_")) if name.startswith("slice_")
                 else getattr(layout, name) for name in SLICE_FIELDS}}
    arrays = {name: np.array(fields[name], dtype=fields[name].dtype
                             if fields[name].dtype.kind == "i" else dtype)
              for name in fields}
    return {**arrays, "floating": True if model.floating else None,
            "dense_slices": True if layout.dense else None}


def axis_frame(axis):
    """A rotation whose third column is the unit ``axis``: the identity for
    z, exact signed permutations for the other coordinate axes."""
    axis = np.asarray(axis, dtype=float)
    if np.array_equal(axis, (0.0, 0.0, 1.0)):
        return np.eye(3)
    # the coordinate axis least aligned with ``axis`` makes the best cross product
    other = np.eye(3)[np.argmin(np.abs(axis))]
    x = np.cross(other, axis)
    x /= np.linalg.norm(x)
    return np.column_stack((x, np.cross(axis, x), axis))


def new_data(record, nb, nv, blocks, dtype, frames=None):
    """A ``Data`` for the ``ModelRecord`` ``record`` (its field ``model``),
    with the work arrays of ``work_arrays``; ``frames``: its ``frame_*``
    arrays, by name (the caller's own arrays, not copies), else none."""
    return _record(Data, {"model": record, **work_arrays(nb, nv, blocks, dtype), **(frames or {})})


def work_arrays(nb, nv, blocks, dtype):
    """``DATA_SHAPES`` as zeroed arrays for nb bodies, nv joints of q, the
    blocks of Gamma's slices (``slices.SliceLayout.total`` numbers) and no
    frames."""
    sizes = {"nb": nb, "nv": nv, "nv+2": nv + 2, "nb+6": nb + 6, "blocks": blocks,
             "lockstep": LOCKSTEP_CORE * LOCKSTEP_CORE * nb, "frames": 0}
    return {name: np.zeros(tuple(sizes.get(d, d) for d in shape),
                           dtype=np.int64 if name in INDEX_ARRAYS else dtype)
            for name, shape in DATA_SHAPES.items()}


def data_type(model, dtype):
    """numba's type of ``model.data(dtype)``, without making one.

    The records' constructors are compiled kernels too: with this type the
    other kernels can be compiled for a model's data before the constructors
    are (``demo.puma.compile_kernels`` does so, in two processes). The types
    are those numba gives the constructors' arguments."""
    def field_types(fields):
        return [(name, numba.typeof(value, Purpose.argument)) for name, value in fields.items()]

    record = ModelRecordType(field_types(model_fields(model, dtype)))
    return DataType([("model", record),
                     *field_types(work_arrays(model.nb, model.nv, model.slice_layout.total, dtype))])
