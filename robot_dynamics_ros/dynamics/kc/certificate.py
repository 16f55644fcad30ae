"""K_c certificates: the file, its re-check, and finding one for a model.

A certificate states that K_c = sup_q k_c(q) over the joint limits of one
model lies in ``[kc_global_lower, kc_global]``, and carries what it takes
to check that without searching: for each part of the search (a root
subtree, ``partition.searched_parts``) the dyadic boxes that partition its
domain, each with its bound (in a compressed ``.npz`` beside the JSON
document, its SHA-256 in the document). ``verify`` recomputes the part's
expansion of Gamma, checks that the boxes partition the domain
(``partition.covers_domain``), bounds every box again and checks each
against the stated upper end, and computes k_c at the witness against the
stated lower end. A certificate made for another model (another
description, limits, payload, mimic or base choice: ``model_hash``) is
refused with the reason before any of that.

The JSON document's keys (docs/design.md, Executables): ``kc_global``,
``kc_global_lower``, ``witness_q``, ``model_hash``, ``payload_range``
(null; or link, mass_max, low, high, with ``vertices`` and
``witness_payload``: ``verify_range``), ``method``, ``method_version``,
``seconds``, and ``model_name``, ``joint_names``, ``payloads`` (the model's
own payloads, for the reader: ``model_hash`` covers them), ``gap``, ``work``
(boxes bounded, units, worker seconds), ``parts`` (per part:
``coordinates``, ``kind`` (``boxes``, ``first_bound`` or ``constant``),
``upper``, ``lower``, ``witness``, ``threshold``, ``boxes``),
``leaves_file``, ``leaves_sha256``.
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import NamedTuple

import numpy as np

from .constant import config_coriolis_constant, value_margin
from .partition import bound_boxes, covers_domain, prepare, searched_parts
from .payload_range import PayloadRange, covers, vertex_model, vertices, without_payload
from .search import KcInterval, refinement_for

METHOD = ("dyadic boxes: exact line restrictions of Gamma + global bounds on the mixed derivatives "
          "and on frozen coordinates' effect (the coefficients of their squared norms)")
# bumped whenever a change to the box bounds or the first bound could
# change what a certificate's leaves mean: older certificates are refused
METHOD_VERSION = 5
_EPS = np.finfo(float).eps


class CertificateError(ValueError):
    """A certificate that does not hold for the model it is checked against:
    the message says why (another model, a tampered bound, a stale method)."""


class KcCertificate(NamedTuple):
    """A certificate loaded for a model: K_c lies in ``[lower, upper]``."""

    lower: float
    upper: float
    witness: np.ndarray
    path: Path
    document: dict


def model_hash(model) -> str:
    """SHA-256 of everything of a model that Gamma and the joint limits
    depend on: the tree, the joints' placements and axes, the bodies'
    inertias (payloads included), the limits, the mimic map and the base.
    Gravity does not enter Gamma and is left out. Two loads of the same
    description with the same options give the same hash."""
    digest = hashlib.sha256()
    for text in (model.base, "|".join(model.joint_names), "|".join(model.body_joint_names)):
        digest.update(text.encode())
        digest.update(b"\0")
    for array, dtype in ((model.parent, np.int64), (model.joint_type, np.int64),
                         (model.joint_placement, float), (model.joint_axis, float),
                         (model.inertia, float), (model.lower, float), (model.upper, float),
                         (model.coordinate_map, float), (model.coordinate_offset, float)):
        value = np.ascontiguousarray(np.asarray(array, dtype=dtype))
        digest.update(str(value.shape).encode())
        digest.update(value.tobytes())
    return digest.hexdigest()


def payloads_document(model):
    """The model's payloads as a certificate states them: per link its mass,
    CoM and inertia about the CoM (link frame)."""
    return {link: {"mass": float(mass), "com": np.asarray(com, dtype=float).tolist(),
                   "inertia": np.asarray(inertia, dtype=float).tolist()}
            for link, (mass, com, inertia) in model.payloads.items()}


def combined_upper(uppers):
    """The upper end of K_c from its parts' upper ends: K_c^2 is the sum of
    the parts' (docs/coriolis_constant.md, structure 2); the root of a sum
    of S squares is inflated by 4 (S + 2) eps for its rounding."""
    uppers = np.asarray(uppers, dtype=float)
    return float(np.sqrt(np.sum(uppers * uppers)) * (1.0 + 4 * (len(uppers) + 2) * _EPS))


def leaves_path(path):
    """Where the leaves of the certificate at ``path`` are kept."""
    path = Path(path)
    return path.with_name(path.name.removesuffix(".json") + ".leaves.npz")


def write_certificate(path, document, leaves):
    """Write the JSON ``document`` and, beside it, the ``leaves`` ({part: (levels,
    index, bounds)}); each file goes to a temporary name first, then is
    renamed (a reader never sees half a file)."""
    path = Path(path)
    store = leaves_path(path)
    arrays = {}
    for part, (levels, index, bounds) in leaves.items():
        arrays[f"levels_{part}"] = np.asarray(levels, dtype=np.uint8)
        arrays[f"index_{part}"] = np.asarray(index, dtype=np.int64)
        arrays[f"bounds_{part}"] = np.asarray(bounds, dtype=float)
    temporary = store.with_name(store.name + ".tmp.npz")
    np.savez_compressed(temporary, **arrays)
    os.replace(temporary, store)
    document = dict(document, leaves_file=store.name, leaves_sha256=file_sha256(store))
    text = path.with_name(path.name + ".tmp")
    text.write_text(json.dumps(document, indent=1) + "\n")
    os.replace(text, path)
    return document


def file_sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def read_document(path):
    """The JSON document of a certificate, or ``CertificateError`` saying
    why it cannot be read."""
    try:
        document = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise CertificateError(f"certificate {path}: cannot be read ({exc})") from None
    missing = [key for key in ("kc_global", "kc_global_lower", "witness_q", "model_hash", "payload_range",
                               "method", "method_version", "parts") if key not in document]
    if missing:
        raise CertificateError(f"certificate {path}: keys missing: {', '.join(missing)}")
    return document


def check_matches(document, model, path="certificate"):
    """``CertificateError`` unless the document was made for ``model`` (its
    hash) with this method version; for a payload range, ``model`` is the
    model without a payload on the range's link (``range_base``)."""
    if document["payload_range"] is not None:
        model = range_base(model, document["payload_range"]["link"], path)
    if document["model_hash"] != model_hash(model):
        raise CertificateError(
            f"{path}: made for another model (model_hash {document['model_hash'][:12]}..., "
            f"this model '{model.name}' has {model_hash(model)[:12]}...: another description, "
            "joint limits, payload, mimic or base choice)")
    if document["method_version"] != METHOD_VERSION:
        raise CertificateError(f"{path}: method version {document['method_version']}, this package checks "
                               f"version {METHOD_VERSION}: compute it again")


def range_base(model, link, path="certificate"):
    """``model`` without its payload on ``link`` (a range certificate's model)."""
    if link not in model.link_frames:
        raise CertificateError(f"{path}: its payload range is on link '{link}', which model '{model.name}' lacks")
    return without_payload(model, link)


def _range_of(document, path):
    """The document's ``PayloadRange``, checked."""
    given = document["payload_range"]
    try:
        return PayloadRange(given["link"], float(given["mass_max"]), tuple(map(float, given["low"])),
                            tuple(map(float, given["high"])))
    except (KeyError, TypeError, ValueError) as exc:
        raise CertificateError(f"{path}: its payload_range cannot be read ({exc})") from None


def covered_payload(document, model, path="certificate"):
    """Whether ``model``'s payload on the range's link (none counts) lies in
    the document's payload range (``payload_range.covers``)."""
    payload = _range_of(document, path)
    if payload.link not in model.payloads:
        return True
    mass, com, inertia = model.payloads[payload.link]
    return covers(payload, mass, com, inertia)


def verify_range(path, model, document, parallel=True):
    """``verify`` of a payload-range certificate: every vertex's own
    certificate verified against the vertex's model rebuilt from the range
    (so a changed range, base model or vertex is refused), the largest of
    their upper ends at most ``kc_global``, and ``kc_global_lower`` at most
    the largest lower end of the physical vertices (point masses at the
    box's corners, no payload)."""
    payload = _range_of(document, path)
    base = range_base(model, payload.link, path)
    expected = vertices(payload)
    stated = document.get("vertices") or []
    if len(stated) != len(expected):
        raise CertificateError(f"{path}: {len(stated)} vertices, its payload range has {len(expected)}")
    uppers, lowers = [], []
    for number, (vertex, entry) in enumerate(zip(expected, stated)):
        if (entry["mass"], tuple(entry["com"]), tuple(entry["variance"])) != (vertex.mass, vertex.com,
                                                                              vertex.variance):
            raise CertificateError(f"{path}: vertex {number} is not a vertex of its payload range "
                                   f"{document['payload_range']}")
        sub = Path(path).with_name(entry["certificate"])
        if not sub.exists() or file_sha256(sub) != entry["sha256"]:
            raise CertificateError(f"{path}: vertex {number}'s certificate {sub} is missing or was changed")
        try:
            result = verify(sub, vertex_model(base, payload, vertex), parallel=parallel)
        except CertificateError as exc:
            raise CertificateError(f"{path}: vertex {number}: {exc}") from None
        uppers.append(result.upper)
        if vertex.physical:
            lowers.append(result.lower)
    kc_global, lower = float(document["kc_global"]), float(document["kc_global_lower"])
    if not max(uppers) <= kc_global:
        raise CertificateError(f"{path}: kc_global {kc_global!r} is below its vertices' {max(uppers)!r}")
    if not lower <= max(lowers):
        raise CertificateError(f"{path}: kc_global_lower {lower!r} is above its physical vertices' "
                               f"{max(lowers)!r}")
    return KcCertificate(lower, kc_global, np.asarray(document["witness_q"], dtype=float), Path(path), document)


def verify(path, model, *, parallel=True):
    """Re-check the certificate at ``path`` for ``model`` without searching;
    returns the ``KcCertificate``, or raises ``CertificateError`` with the
    reason. Costs one bound per stored box (about half the search's work,
    which bounded every box it halved too) and the parts' expansions."""
    document = read_document(path)
    check_matches(document, model, path)
    if document["payload_range"] is not None:
        return verify_range(path, model, document, parallel)
    store = Path(path).with_name(document["leaves_file"])
    if not store.exists():
        raise CertificateError(f"{path}: its leaves {store} are missing")
    if file_sha256(store) != document["leaves_sha256"]:
        raise CertificateError(f"{path}: its leaves {store} were changed after it was made (SHA-256 differs)")
    leaves = np.load(store)
    parts = searched_parts(model)
    if len(parts) != len(document["parts"]):
        raise CertificateError(f"{path}: {len(document['parts'])} parts, the model has {len(parts)}")
    uppers = []
    for number, ((part_model, coordinates), stated) in enumerate(zip(parts, document["parts"])):
        if list(coordinates) != stated["coordinates"]:
            raise CertificateError(f"{path}: part {number} has other coordinates than the model's")
        upper = float(stated["upper"])
        part = prepare(part_model)
        if stated["kind"] == "first_bound":
            if upper < part.first_bound:
                raise CertificateError(f"{path}: part {number} states {upper!r}, below its first bound "
                                       f"{part.first_bound!r}")
        elif stated["kind"] == "constant":
            witness = np.asarray(stated["witness"], dtype=float)
            value = config_coriolis_constant(part_model, witness[None])[0]
            if not upper >= value + value_margin(part_model, part.first_bound):
                raise CertificateError(f"{path}: part {number} states {upper!r}, below k_c {value!r} plus "
                                       "its rounding margin")
        else:
            if part.setup is None:
                raise CertificateError(f"{path}: part {number} states boxes, but no box search applies")
            levels, index = leaves[f"levels_{number}"], leaves[f"index_{number}"]
            if levels.ndim != 2 or levels.shape[1] != len(part.setup.free) or index.shape != levels.shape:
                raise CertificateError(f"{path}: part {number}: its boxes do not fit its coordinates")
            if not covers_domain(levels, index):
                raise CertificateError(f"{path}: part {number}: its boxes do not partition the joint limits")
            bounds = np.empty(len(levels))
            for start in range(0, len(levels), 4096):
                some = slice(start, start + 4096)
                bounds[some] = bound_boxes(part_model, part, levels[some], index[some], parallel)[0]
            worst = int(np.argmax(bounds))
            if not bounds[worst] <= upper:
                raise CertificateError(
                    f"{path}: part {number}: box {worst} has bound {bounds[worst]!r} above the stated "
                    f"upper end {upper!r}")
        uppers.append(upper)
    kc_global = float(document["kc_global"])
    if not combined_upper(uppers) <= kc_global:
        raise CertificateError(f"{path}: kc_global {kc_global!r} is below what its parts give, "
                               f"{combined_upper(uppers)!r}")
    witness = np.asarray(document["witness_q"], dtype=float)
    lower_limit, upper_limit, _ = model.joint_limits()
    joints = witness[model.nq - len(model.joint_names):]
    if witness.shape != (model.nq,) or np.any(joints < lower_limit) or np.any(joints > upper_limit):
        raise CertificateError(f"{path}: witness_q is not a configuration within the joint limits")
    value = config_coriolis_constant(model, witness[None])[0]
    lower = float(document["kc_global_lower"])
    if not value >= lower:
        raise CertificateError(f"{path}: kc_global_lower {lower!r} is above k_c at witness_q, {value!r}")
    return KcCertificate(lower, kc_global, witness, Path(path), document)


def certificate_for(model, location):
    """The certificate for ``model`` at ``location``, or None: what the node
    and the replay serve (parameter ``kc_certificate``, ``--kc-certificate``).

    ``location``: a certificate file (``*.json``), or a directory searched
    for ``*.json`` certificates whose ``model_hash`` is the model's (the
    newest such file wins). A file made for another model raises
    ``CertificateError`` with the reason; a directory without a match gives
    None. A payload-range certificate matches the model without its payload
    on the range's link, and serves it when that payload is in the range
    (``covered_payload``; else None), with ``kc_global`` as the upper end
    and k_c at ``witness_q`` as the lower end. The document's bounds are
    taken as they are stored (reading them is cheap; re-checking them is
    not): ``verify`` is the full re-check, run where the certificate is
    made or installed (``robot_dynamics_certify --verify``).
    """
    location = Path(location)
    if location.is_dir():
        found = []
        for candidate in location.glob("*.json"):
            try:
                document = read_document(candidate)
                ranged = document["payload_range"] is not None
                base = range_base(model, document["payload_range"]["link"], candidate) if ranged else model
                if document["model_hash"] == model_hash(base) and (
                        not ranged or covered_payload(document, model, candidate)):
                    found.append((candidate.stat().st_mtime, candidate, document))
            except (CertificateError, KeyError, TypeError):
                continue
        if not found:
            return None
        _, location, document = max(found, key=lambda item: item[0])
        check_matches(document, model, location)  # a stale method version is refused with the reason
    else:
        document = read_document(location)
        check_matches(document, model, location)
        if document["payload_range"] is not None and not covered_payload(document, model, location):
            return None
    lower, upper = float(document["kc_global_lower"]), float(document["kc_global"])
    if document["payload_range"] is not None:
        # the range's lower end is another payload's: this model's is k_c at the witness
        value = config_coriolis_constant(model, np.asarray(document["witness_q"], dtype=float)[None])[0]
        lower = float(value) if np.isfinite(value) else 0.0
    if not (np.isfinite(lower) and np.isfinite(upper) and 0.0 <= lower <= upper):
        raise CertificateError(f"{location}: its interval [{lower}, {upper}] is no interval")
    return KcCertificate(lower, upper, np.asarray(document["witness_q"], dtype=float), location, document)


def serve_certificate(model, location):
    """Look up the certificate for ``model`` at ``location``
    (``certificate_for``) and, when there is one, make its interval the
    model's (``refinement_for(model)``, finished: no refinement follows), so
    that ``coriolis_bounds`` and ``all_terms`` report it from their first
    call; a model served first by its certificate never computes its first
    bound. Returns the ``KcCertificate`` or None (the model keeps its first
    bound); ``CertificateError`` for a file made for another model."""
    certificate = certificate_for(model, location)
    if certificate is not None:
        refinement_for(model, certified=KcInterval(certificate.lower, certificate.upper,
                                                   certificate.witness, True))
    return certificate
