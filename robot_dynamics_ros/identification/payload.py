"""A payload's inertial parameters identified from joint states with efforts.

The joint torques are linear in the ten inertial parameters of a rigid body
on a link (Atkeson, An and Hollerbach, 1986, "Estimation of inertial
parameters of manipulator loads and links", Int. J. Robotics Research):

    tau - ID_without_payload(q, qd, qdd) = Y(q, qd, qdd) phi + noise,
    phi = [m, m c_x, m c_y, m c_z, I_xx, I_xy, I_xz, I_yy, I_yz, I_zz]

with c the centre of mass and I the inertia about the link's origin, both in
the link frame. Y's columns are the torques of unit changes of each
parameter, taken from the package's own inverse dynamics (exact, since ID is
affine in phi). The estimate is weighted least squares (each joint weighted
by the inverse of its residual standard deviation, estimated from a first
unweighted fit) on the columns scaled to unit norm; its singular values give
the excitation: the condition number, and which directions of phi the data
does not see (a singular value below ``RANK_TOLERANCE`` of the largest).
Those directions are left out of the solution (truncated SVD), and a
quantity that depends on them is "not identifiable", as is a quantity whose
95% confidence interval is wider than its ``precision`` limit.

Physical consistency: the pseudo-inertia matrix
J = [[tr(I)/2 1 - I, m c], [m c^T, m]] is positive semidefinite exactly when
m >= 0 and the inertia about the centre of mass is positive semidefinite
with the triangle inequalities (Wensing, Kim and Slotine, 2017, "Linear
matrix inequalities for physically consistent inertial parameter
identification", IEEE Robotics and Automation Letters, Theorem 1). An
estimate outside that set is moved to the nearest J with non-negative
eigenvalues (Frobenius norm), and the report says so.

No ROS import: the replay (offline) and the node's ``~/identify_payload``
(live) call ``identify_payload`` on arrays.
"""

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence

import numpy as np

from robot_dynamics_ros import dynamics

PARAMETERS = ("m", "m*cx", "m*cy", "m*cz", "Ixx", "Ixy", "Ixz", "Iyy", "Iyz", "Izz")
# Directions of phi whose singular value (columns scaled to unit norm) is below
# this fraction of the largest are not seen by the data.
RANK_TOLERANCE = 1e-4
# A direction counts as part of a quantity when its share of that quantity's
# parameters exceeds this.
NULL_SHARE = 1e-3
# A regressor column below this fraction of the largest is taken as zero.
ZERO_COLUMN = 1e-7
# z of a two-sided 95% interval.
Z95 = 1.959963984540054
# The widest 95% half-interval still printed as a number.
PRECISION = {"mass_relative": 0.05, "com_m": 0.005, "inertia_relative": 0.5}

# A valid payload around which the regressor's columns are taken: 1 kg at the
# origin with 0.1 kg m^2 about each axis, and steps that keep every probe
# physically valid (torques are affine in phi, so any valid probes give Y).
_BASE = np.array([1.0, 0.0, 0.0, 0.0, 0.1, 0.0, 0.0, 0.1, 0.0, 0.1])
_STEPS = np.array([1.0, 0.05, 0.05, 0.05, 0.05, 0.02, 0.02, 0.05, 0.02, 0.05])


def inertia_matrix(six) -> np.ndarray:
    """(3, 3) from [xx, xy, xz, yy, yz, zz]."""
    xx, xy, xz, yy, yz, zz = six
    return np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])


def to_payload(phi: np.ndarray):
    """(mass, com (3,), inertia about the CoM (3, 3)) of parameters phi."""
    mass, h = phi[0], phi[1:4]
    inertia_origin = inertia_matrix(phi[4:])
    if mass <= 0:
        return mass, np.zeros(3), inertia_origin
    com = h / mass
    return mass, com, inertia_origin - mass * (com @ com * np.eye(3) - np.outer(com, com))


def from_payload(mass: float, com, inertia_com) -> np.ndarray:
    """phi of a payload given as mass, CoM and inertia about the CoM."""
    com = np.asarray(com, dtype=float)
    inertia = np.asarray(inertia_com, dtype=float) + mass * (com @ com * np.eye(3) - np.outer(com, com))
    return np.array([mass, *(mass * com), inertia[0, 0], inertia[0, 1], inertia[0, 2],
                     inertia[1, 1], inertia[1, 2], inertia[2, 2]])


def pseudo_inertia(phi: np.ndarray) -> np.ndarray:
    inertia = inertia_matrix(phi[4:])
    j = np.zeros((4, 4))
    j[:3, :3] = 0.5 * np.trace(inertia) * np.eye(3) - inertia
    j[:3, 3] = j[3, :3] = phi[1:4]
    j[3, 3] = phi[0]
    return j


def from_pseudo_inertia(j: np.ndarray) -> np.ndarray:
    sigma = j[:3, :3]
    inertia = np.trace(sigma) * np.eye(3) - sigma
    return np.array([j[3, 3], *j[:3, 3], inertia[0, 0], inertia[0, 1], inertia[0, 2],
                     inertia[1, 1], inertia[1, 2], inertia[2, 2]])


def project_physical(phi: np.ndarray) -> np.ndarray:
    """The nearest physically consistent parameters: the pseudo-inertia's
    negative eigenvalues set to zero."""
    values, vectors = np.linalg.eigh(pseudo_inertia(phi))
    return from_pseudo_inertia((vectors * np.maximum(values, 0.0)) @ vectors.T)


def regressor(model, link: str, q: np.ndarray, qd: np.ndarray, qdd: np.ndarray) -> np.ndarray:
    """Y (N, nv, 10): d tau / d phi of a payload on ``link``, by the model's own
    inverse dynamics at valid probe payloads."""
    def torques(phi):
        mass, com, inertia = to_payload(phi)
        return dynamics.inverse_dynamics(model.with_payload(link, mass, com, inertia), q, qd, qdd)

    base = torques(_BASE)
    columns = []
    for k, step in enumerate(_STEPS):
        probe = _BASE.copy()
        probe[k] += step
        columns.append((torques(probe) - base) / step)
    return np.stack(columns, axis=-1)


@dataclass
class Quantity:
    """An identified quantity: its value and 95% half-interval, or why not."""

    value: Optional[np.ndarray]
    half_width: Optional[np.ndarray]
    reason: str = ""

    @property
    def identified(self) -> bool:
        return not self.reason


@dataclass
class PayloadEstimate:
    link: str
    samples: int
    mass: Quantity
    com: Quantity
    inertia: Quantity  # six values, about the CoM in link axes
    phi: np.ndarray  # the estimate, physically consistent
    phi_half_width: np.ndarray
    condition_number: float
    identifiable: Dict[str, bool]  # per element of phi
    projected: float  # how far the projection moved phi (0: it was consistent)
    noise: np.ndarray  # residual standard deviation per joint
    notes: List[str] = field(default_factory=list)

    def lines(self, node: str = "/robot_dynamics") -> str:
        """The ``ros2 param set`` lines and the YAML that apply the estimate."""
        fmt = lambda v: "[" + ", ".join(f"{x:.6g}" for x in v) + "]"  # noqa: E731
        out = [f"ros2 param set {node} payload.link {self.link}"]
        yaml = [f"{node.lstrip('/').split('/')[-1]}:", "  ros__parameters:", f"    payload.link: {self.link}"]
        for name, quantity, text in (("mass", self.mass, lambda v: f"{float(v):.6g}"),
                                     ("com", self.com, lambda v: f'"{fmt(v)}"'),
                                     ("inertia", self.inertia, lambda v: f'"{fmt(v)}"')):
            if quantity.identified:
                out.append(f"ros2 param set {node} payload.{name} {text(quantity.value)}")
                yaml.append(f"    payload.{name}: {text(quantity.value).strip(chr(34))}")
            else:
                out.append(f"# payload.{name}: not identifiable: {quantity.reason}")
                yaml.append(f"    # payload.{name}: not identifiable: {quantity.reason}")
        return "\n".join(out + [""] + yaml)

    def report(self) -> str:
        """Estimate, intervals, excitation, and the lines that apply it."""
        rows = [f"payload on {self.link} identified from {self.samples} joint states "
                f"(95% intervals; condition number of the scaled regressor {self.condition_number:.3g})"]
        if self.mass.identified:
            rows.append(f"  mass     {float(self.mass.value):.4g} +- {float(self.mass.half_width):.2g} kg")
        if self.com.identified:
            rows.append("  com      [" + ", ".join(f"{v:.4f} +- {w:.4f}" for v, w in
                                                  zip(self.com.value, self.com.half_width)) + "] m")
        if self.inertia.identified:
            rows.append("  inertia  [" + ", ".join(f"{v:.3g} +- {w:.2g}" for v, w in
                                                  zip(self.inertia.value, self.inertia.half_width))
                        + "] kg m^2 (xx xy xz yy yz zz about the CoM)")
        for name, quantity in (("mass", self.mass), ("com", self.com), ("inertia", self.inertia)):
            if not quantity.identified:
                rows.append(f"  {name:<8} not identifiable: {quantity.reason}")
        seen = [p for p, ok in self.identifiable.items() if ok]
        unseen = [p for p, ok in self.identifiable.items() if not ok]
        rows.append(f"  excitation: identifiable {', '.join(seen) or 'none'}"
                    + (f"; not seen by the data: {', '.join(unseen)}" if unseen else ""))
        rows.extend(f"  note: {note}" for note in self.notes)
        return "\n".join(rows + ["", self.lines()])


def _weighted_solve(a: np.ndarray, b: np.ndarray):
    """Truncated-SVD least squares on unit-norm columns: (x, covariance factor
    (A^T A)^+, singular values, null-space basis (10, k))."""
    norms = np.linalg.norm(a, axis=0)
    # A column this much smaller than the largest is round-off of the probes'
    # differences, not torque: the parameter does not act at these samples.
    norms = np.where(norms > ZERO_COLUMN * norms.max(), norms, 0.0)
    a = np.where(norms > 0, a, 0.0)
    scale = np.where(norms > 0, norms, 1.0)
    u, s, vt = np.linalg.svd(a / scale, full_matrices=False)
    keep = s > RANK_TOLERANCE * s[0] if s[0] > 0 else np.zeros_like(s, dtype=bool)
    inverse = np.where(keep, 1.0 / np.where(keep, s, 1.0), 0.0)
    x = (vt.T * inverse) @ (u.T @ b) / scale
    cov = ((vt.T * inverse ** 2) @ vt) / np.outer(scale, scale)
    null = vt[~keep].T
    zero = norms == 0
    if zero.any():  # a column the data never excites is its own null direction
        null = np.column_stack([null, np.eye(len(norms))[:, zero]])
    cond = float(s[0] / s[keep][-1]) if keep.any() else float("inf")
    if (~keep).any() or zero.any():
        cond = float("inf")
    return x, cov, null, cond


def identify_payload(model, link: str, q: np.ndarray, qd: np.ndarray, qdd: np.ndarray,
                     effort: np.ndarray, precision: Dict[str, float] = PRECISION) -> PayloadEstimate:
    """Identify the payload on ``link`` from samples (model joint order, fixed
    base) of q, qd, qdd and efforts. Any payload the model already
    has on ``link`` is replaced by the estimate."""
    if link not in model.link_frames:
        raise ValueError(f"payload link '{link}' is not a link of model '{model.name}'")
    if len(q) < 10:
        raise ValueError(f"{len(q)} joint states cannot identify ten parameters")
    bare = model.with_payload(link, 0.0, np.zeros(3), np.zeros((3, 3)))
    y = effort - dynamics.inverse_dynamics(bare, q, qd, qdd)  # (N, n)
    regress = regressor(bare, link, q, qd, qdd)  # (N, n, 10)
    phi, cov, null, cond, noise = _weighted_fit(regress, y)
    notes = []
    consistent = project_physical(phi)
    moved = float(np.linalg.norm(consistent - phi))
    if moved > 1e-9 * max(float(np.linalg.norm(phi)), 1e-12):
        notes.append(f"the least-squares estimate was not physically consistent; projected onto "
                     f"consistent parameters (moved by {moved:.3g} in phi)")
    seen = {p: bool(np.all(np.abs(null[k]) < NULL_SHARE)) for k, p in enumerate(PARAMETERS)}
    half = Z95 * np.sqrt(np.maximum(np.diag(cov), 0.0))
    mass_value, com_value, inertia_value = to_payload(consistent)
    mass = _mass(phi, consistent, half, mass_value, seen, precision)
    com = _centre_of_mass(consistent, cov, com_value, mass, seen, precision)
    inertia = _inertia(consistent, cov, inertia_value, com, seen, precision)
    return PayloadEstimate(link, len(q), mass, com, inertia, consistent, half, cond, seen, moved, noise, notes)


def _weighted_fit(regress: np.ndarray, y: np.ndarray):
    """(phi, covariance, null-space basis, condition number, noise per
    joint) of ``y`` (N, n) = ``regress`` (N, n, 10) phi + noise: first an
    unweighted fit for each joint's noise level, then the fit weighted by
    its inverse, whose covariance is scaled by the residual variance (~1
    when the weights are right)."""
    phi, _, _, _ = _weighted_solve(regress.reshape(-1, 10), y.reshape(-1))
    noise = np.std(y - regress @ phi, axis=0)
    noise = np.where(noise > 0, noise, max(float(noise.max()), 1e-12))
    weights = 1.0 / noise
    a = (regress * weights[None, :, None]).reshape(-1, 10)
    b = (y * weights[None, :]).reshape(-1)
    phi, cov, null, cond = _weighted_solve(a, b)
    dof = max(a.shape[0] - 10, 1)
    variance = float(np.sum((b - a @ phi) ** 2) / dof)  # ~1 when the weights are right
    return phi, cov * variance, null, cond, noise


def _unseen(seen: Dict[str, bool], indices) -> List[str]:
    """The parameters among ``indices`` (of ``PARAMETERS``) the data does not see."""
    return [PARAMETERS[k] for k in indices if not seen[PARAMETERS[k]]]


def _mass(phi, consistent, half, mass_value, seen, precision) -> Quantity:
    """The mass, unless the data does not see it, the projection onto
    consistent parameters moves it outside its interval, or its interval is
    wider than ``precision["mass_relative"]`` of it."""
    if _unseen(seen, [0]):
        return Quantity(None, None, "the trajectory does not excite the mass (" + ", ".join(_unseen(seen, [0]))
                        + " lies in the regressor's null space)")
    if abs(consistent[0] - phi[0]) > half[0] + 1e-9 * abs(phi[0]):
        return Quantity(None, None, f"the least-squares estimate ({phi[0]:.3g} kg with the other parameters) "
                        f"is not physically consistent, and the nearest consistent one moves the mass "
                        f"to {consistent[0]:.3g} kg, outside its interval")
    if consistent[0] <= 0 or half[0] > precision["mass_relative"] * consistent[0]:
        return Quantity(None, None, f"95% interval {phi[0]:.3g} +- {half[0]:.2g} kg is wider than "
                        f"{100 * precision['mass_relative']:g}% of the estimate")
    return Quantity(np.float64(mass_value), np.float64(half[0]))


def _centre_of_mass(consistent, cov, com_value, mass: Quantity, seen, precision) -> Quantity:
    """The centre of mass c = h / m, its interval by the delta method; it
    needs the mass, and every half-width within ``precision["com_m"]``."""
    jac = np.zeros((3, 10))
    if consistent[0] > 0:
        jac[:, 0] = -consistent[1:4] / consistent[0] ** 2
        jac[:, 1:4] = np.eye(3) / consistent[0]
    com_half = Z95 * np.sqrt(np.maximum(np.diag(jac @ cov @ jac.T), 0.0))
    if not mass.identified:
        return Quantity(None, None, "it needs the mass, which is not identifiable")
    if _unseen(seen, range(1, 4)):
        return Quantity(None, None, "the trajectory does not excite " + ", ".join(_unseen(seen, range(1, 4)))
                        + " (a static or slow trajectory sees the CoM only across gravity); "
                        "move more joints, with accelerations, in several orientations")
    if np.any(com_half > precision["com_m"]):
        return Quantity(None, None, "95% interval half-widths " + ", ".join(f"{w * 1000:.1f}" for w in com_half)
                        + f" mm exceed {precision['com_m'] * 1000:g} mm")
    return Quantity(com_value, com_half)


def _inertia(consistent, cov, inertia_value, com: Quantity, seen, precision) -> Quantity:
    """The inertia about the centre of mass (six values), its interval by
    the delta method with a numerical Jacobian; it needs the centre of
    mass, and every half-width within ``precision["inertia_relative"]`` of
    the largest principal moment."""
    six = lambda p: to_payload(p)[2][[0, 0, 0, 1, 1, 2], [0, 1, 2, 1, 2, 2]]  # noqa: E731
    step = 1e-6 * np.maximum(np.abs(consistent), 1e-3)
    jac = np.column_stack([(six(consistent + step[k] * np.eye(10)[k]) - six(consistent - step[k] * np.eye(10)[k]))
                           / (2 * step[k]) for k in range(10)])
    inertia_half = Z95 * np.sqrt(np.maximum(np.diag(jac @ cov @ jac.T), 0.0))
    principal = np.linalg.eigvalsh(inertia_value).max()
    if not com.identified:
        return Quantity(None, None, "it needs the centre of mass, which is not identifiable")
    if _unseen(seen, range(4, 10)):
        return Quantity(None, None, "the trajectory does not excite " + ", ".join(_unseen(seen, range(4, 10))))
    if np.any(inertia_half > precision["inertia_relative"] * max(principal, 1e-12)):
        return Quantity(None, None, f"95% interval half-widths up to {inertia_half.max():.2g} kg m^2 exceed "
                        f"{100 * precision['inertia_relative']:g}% of the largest principal moment "
                        f"({principal:.2g} kg m^2): the motion is too slow to see so small an inertia")
    return Quantity(six(consistent), inertia_half)
