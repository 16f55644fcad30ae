"""Rigid-body dynamics of kinematic trees, fixed or floating, from the URDF.

Pure numerics (numpy, numba, urdf-parser-py); nothing here imports ROS.
Every function takes one sample (n,) or a batch (N, n) of joint values in the
order of ``model.joint_names``; a floating base (``load_urdf(...,
base="floating")``) adds its pose to q (``model.nq``) and its twist to qd,
qdd and tau (``model.nv``), docs/floating_base.md.

The compiled kernels are cached where every install of these sources finds
them (``kernel_cache``, registered here before any kernel is defined);
``python -m robot_dynamics_ros.dynamics.precompile`` fills that cache, as
the install does.
"""
from .kernel_cache import register as _register_kernel_cache

_register_kernel_cache()

from .terms import AllTerms, all_terms, coriolis_bounds, state_terms
from .bounds.coriolis_bounds import BOUNDS_FIELDS, CoriolisBounds
from .algorithms.christoffel import christoffel_symbols
from .algorithms.coriolis import coriolis_matrix
from .algorithms.crba import mass_matrix
from .errors import CoriolisConstantError, DynamicsError, FrameError, PayloadError, StateError, URDFError
from .algorithms.forward_dynamics import forward_dynamics
from .algorithms.frames import frame_jacobian, frame_jacobian_dot_v, frame_placement, frame_terms
from .kc import CoriolisConstantRefinement, KcInterval, coriolis_constant_interval
from .model.model import Model
from .model.puma import puma_urdf
from .algorithms.rnea import gravity_torques, inverse_dynamics
from .algorithms.simulate import Simulation, simulate
from .model.urdf import load_urdf

__all__ = [
    "AllTerms", "BOUNDS_FIELDS", "all_terms", "state_terms",
    "CoriolisBounds", "CoriolisConstantError", "CoriolisConstantRefinement", "KcInterval",
    "coriolis_constant_interval", "DynamicsError", "Model", "PayloadError", "StateError", "URDFError",
    "christoffel_symbols", "coriolis_bounds", "coriolis_matrix", "gravity_torques", "inverse_dynamics", "load_urdf",
    "mass_matrix",
    "puma_urdf",
    "forward_dynamics", "Simulation", "simulate",
    "FrameError", "frame_jacobian", "frame_jacobian_dot_v", "frame_placement", "frame_terms",
]
