"""Errors raised for bad input: each names what is wrong and where."""
import reprlib


class DynamicsError(ValueError):
    """Base class: bad input to the dynamics (model, URDF, payload or state)."""


class URDFError(DynamicsError):
    """The robot description cannot be turned into a model."""


class PayloadError(DynamicsError):
    """A payload request is invalid (link, mass, CoM or inertia)."""


class StateError(DynamicsError):
    """q, qd, qdd or tau has the wrong shape or non-finite values."""


class FrameError(DynamicsError):
    """A frame name that is no link of the model; the message lists the links."""


class CoriolisConstantError(DynamicsError):
    """A setting of the K_c refinement is invalid (tolerance, memory, time)."""


def not_a_model(value):
    """The error for a call with ``value`` where its first argument, a
    ``Model``, belongs."""
    return DynamicsError(f"the first argument must be a Model (from load_urdf), "
                         f"got {type(value).__name__} {reprlib.repr(value)}")
