"""A K_c certificate over a payload range: one search per vertex of the
range's polytope (``dynamics.kc.payload_range``), each an ordinary
certificate beside the range's, then their combination: the largest upper
end (K_c is convex in the payload's parameters), and the largest lower end
among the physical vertices (no payload, point masses at the box's corners).
"""
from __future__ import annotations

import time
from pathlib import Path

from robot_dynamics_ros.dynamics.kc.certificate import (METHOD, METHOD_VERSION, file_sha256, model_hash, payloads_document,
                                       range_base, write_certificate)
from robot_dynamics_ros.dynamics.kc.payload_range import vertex_model, vertices
from .search import certify


def vertex_path(output, number):
    """Where the certificate of vertex ``number`` of the range certificate ``output`` goes."""
    output = Path(output)
    return output.with_name(f"{output.name.removesuffix('.json')}.vertex-{number:02d}.json")


def certify_range(model, payload, output, *, gap, time_budget, client, workers, checkpoint_dir,
                  unit_seconds, progress=None):
    """Certify every vertex of ``payload`` (a ``PayloadRange`` of ``model``),
    each within an even share of what is left of ``time_budget``, each
    resumable from its own checkpoint (``checkpoint_dir``/vertex-NN), write
    their certificates beside ``output`` and return the range's document
    (for ``write_certificate``, with no leaves of its own)."""
    base = range_base(model, payload.link)
    corners = vertices(payload)
    started = time.monotonic()
    entries, best = [], None
    work = {"units": 0, "boxes_bounded": 0, "workers": workers, "unit_seconds": unit_seconds}
    for number, vertex in enumerate(corners):
        left = time_budget - (time.monotonic() - started)
        share = max(0.0, left) / (len(corners) - number)
        document, leaves = certify(vertex_model(base, payload, vertex), gap=gap, time_budget=share, client=client,
                                   workers=workers, checkpoint_dir=Path(checkpoint_dir) / f"vertex-{number:02d}",
                                   unit_seconds=unit_seconds, progress=progress)
        path = vertex_path(output, number)
        write_certificate(path, document, leaves)
        entries.append({"mass": vertex.mass, "com": list(vertex.com), "variance": list(vertex.variance),
                        "physical": vertex.physical, "certificate": path.name, "sha256": file_sha256(path),
                        "upper": document["kc_global"], "lower": document["kc_global_lower"]})
        for key in ("units", "boxes_bounded"):
            work[key] += document["work"][key]
        if vertex.physical and (best is None or document["kc_global_lower"] > best[0]):
            best = (document["kc_global_lower"], document["witness_q"], vertex)
    upper = max(entry["upper"] for entry in entries)
    lower, witness, vertex = best
    return {
        "kc_global": upper, "kc_global_lower": lower, "witness_q": witness,
        "witness_payload": {"mass": vertex.mass, "com": list(vertex.com)},
        "model_hash": model_hash(base), "model_name": model.name, "joint_names": list(model.joint_names),
        "payloads": payloads_document(base), "payload_range": payload.as_document(), "method": METHOD,
        "method_version": METHOD_VERSION,
        "seconds": time.monotonic() - started, "gap": gap, "reached": bool(upper <= gap * lower * (1 + 1e-12)),
        "work": work, "parts": [], "vertices": entries,
    }
