"""K_c certificates over a payload range (robot_dynamics_certify
--payload-range, dynamics.kc.payload_range), on the real engine.

Oracles: an independent ascent (numpy's SVD, scipy's L-BFGS-B) on models
carrying payloads sampled inside the range (solid boxes, point masses and
mixtures of them), which must never exceed the range's upper end; inertia
parameters of bodies built from point masses, which the range must cover
(or refuse when they leave it); the certificate's own re-check, which must
refuse a changed range and a lowered bound.
"""
import json
from pathlib import Path

import numpy as np
import pytest

from kc_ascent import independent_ascent
from robots import named_urdf
from robot_dynamics_ros.certify.cli import main as certify_main
from robot_dynamics_ros.certify.engine import start_client
from robot_dynamics_ros.certify.ranges import certify_range
from robot_dynamics_ros.dynamics import load_urdf
from robot_dynamics_ros.dynamics.kc.certificate import (CertificateError, certificate_for, verify,
                                                        write_certificate)
from robot_dynamics_ros.dynamics.kc.payload_range import covers, payload_range, vertices

# certificate searches over payload ranges on a Dask cluster
pytestmark = pytest.mark.slow

SMALL = "chain-31-4"
LINK = "l7_317"
LOW, HIGH = np.array([-0.05, -0.02, 0.0]), np.array([0.05, 0.04, 0.1])
MASS_MAX = 2.0


def _point_masses(rng, count):
    """(mass, CoM, inertia about the CoM) of ``count`` point masses inside the box."""
    points = rng.uniform(LOW, HIGH, (count, 3))
    masses = rng.uniform(0.0, MASS_MAX / count, count)
    mass = masses.sum()
    com = masses @ points / mass
    offsets = points - com
    second = (masses[:, None, None] * offsets[:, :, None] * offsets[:, None, :]).sum(axis=0)
    return mass, com, np.trace(second) * np.eye(3) - second


def _solid_box(rng):
    size = rng.uniform(0.0, HIGH - LOW)
    centre = rng.uniform(LOW + size / 2, HIGH - size / 2)
    mass = rng.uniform(0.0, MASS_MAX)
    a, b, c = size ** 2
    return mass, centre, mass / 12 * np.diag([b + c, a + c, a + b])


@pytest.fixture(scope="module")
def range_certificate(tmp_path_factory):
    directory = tmp_path_factory.mktemp("range")
    urdf = directory / f"{SMALL}.urdf"
    urdf.write_text(named_urdf(SMALL))
    model = load_urdf(urdf)
    payload = payload_range(model, LINK, MASS_MAX, LOW, HIGH)
    client, cluster, workers = start_client(2)
    try:
        path = directory / "range.kc.json"
        document = certify_range(model, payload, path, gap=1.05, time_budget=84.0, client=client, workers=workers,
                                 checkpoint_dir=directory / "checkpoint", unit_seconds=0.5)
    finally:
        client.close()
        cluster.close()
    write_certificate(path, document, {})
    return urdf, model, path, json.loads(path.read_text())


def test_the_range_polytope_holds_every_body_in_the_box_and_nothing_outside():
    """Point masses, mixtures of them and solid boxes inside the box, of
    mass up to MASS_MAX, are covered; too heavy, outside or too spread out
    for the box are not; 28 vertices, 9 of them physical."""
    model = load_urdf(named_urdf(SMALL))
    payload = payload_range(model, LINK, MASS_MAX, LOW, HIGH)
    assert len(vertices(payload)) == 28 and sum(v.physical for v in vertices(payload)) == 9
    rng = np.random.default_rng(7)
    bodies = [_point_masses(rng, 1) for _ in range(8)] + [_point_masses(rng, 5) for _ in range(8)] + \
        [_solid_box(rng) for _ in range(8)]
    for mass, com, inertia in bodies:
        assert covers(payload, mass, com, inertia), (mass, com)
    assert not covers(payload, 1.01 * MASS_MAX, (LOW + HIGH) / 2, np.zeros((3, 3)))
    assert not covers(payload, 1.0, HIGH + [0.0, 0.0, 0.01], np.zeros((3, 3)))
    # a rod along x 0.2 m long: longer than the box
    assert not covers(payload, 1.0, (LOW + HIGH) / 2, np.diag([0.0, 1.0, 1.0]) * 0.2 ** 2 / 12)


def test_no_ascent_on_a_payload_in_the_range_exceeds_its_certificate(range_certificate):
    urdf, model, path, document = range_certificate
    assert document["payload_range"] == {"link": LINK, "mass_max": MASS_MAX, "low": LOW.tolist(),
                                         "high": HIGH.tolist()}
    rng = np.random.default_rng(11)
    bodies = [_point_masses(rng, 1) for _ in range(3)] + [_solid_box(rng) for _ in range(2)] + \
        [(MASS_MAX, HIGH, np.zeros((3, 3)))]
    for mass, com, inertia in bodies:
        carried = model.with_payload(LINK, mass, com, inertia)
        best, where = independent_ascent(carried, str(urdf), samples=300, starts=1)
        assert best <= document["kc_global"], (mass, com, best, document["kc_global"])
        served = certificate_for(carried, path)
        assert served.upper == document["kc_global"] and served.lower <= best * (1 + 1e-9)
    assert document["kc_global_lower"] <= document["kc_global"]


def test_a_payload_outside_the_range_is_not_served(range_certificate):
    urdf, model, path, document = range_certificate
    assert certificate_for(model.with_payload(LINK, 1.5 * MASS_MAX, LOW, np.zeros((3, 3))), path) is None
    with pytest.raises(CertificateError, match="another model"):
        certificate_for(model.with_payload("l6_424", 1.0, LOW, np.zeros((3, 3))), path)


def test_verify_holds_and_refuses_a_changed_range_or_a_lowered_bound(range_certificate, tmp_path):
    urdf, model, path, document = range_certificate
    assert verify(path, model).upper == document["kc_global"]
    assert certify_main(["--verify", str(path), str(urdf)]) == 0
    for change, needle in ((dict(payload_range=dict(document["payload_range"], mass_max=3.0)), "vertex"),
                           (dict(kc_global=0.99 * document["kc_global"]), "below its vertices")):
        tampered = path.with_name("tampered.kc.json")
        tampered.write_text(json.dumps(dict(document, **change)))
        with pytest.raises(CertificateError, match=needle):
            verify(tampered, model)


@pytest.mark.parametrize("range_arguments, needle", [
    (["nowhere", "1", "0", "0.1", "0", "0.1", "0", "0.1"], "not a link"),
    ([LINK, "-1", "0", "0.1", "0", "0.1", "0", "0.1"], "positive finite mass"),
    ([LINK, "1", "0.1", "0", "0", "0.1", "0", "0.1"], "above its high end"),
])
def test_a_bad_payload_range_exits_with_status_2_and_says_why(range_arguments, needle, tmp_path, capsys):
    urdf = Path(tmp_path) / "small.urdf"
    urdf.write_text(named_urdf(SMALL))
    assert certify_main([str(urdf), "--payload-range", *range_arguments]) == 2
    assert needle in capsys.readouterr().err
