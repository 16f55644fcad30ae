"""The demo's K_c certificates (robot_dynamics_ros/demo/certificates/, made by
scripts/demo_certificates.py) hold for the models the demo's node serves.

Oracles: the certificate's full re-check (``verify``: every stored box
bounded again against the stated upper end, k_c at the witness against the
lower end) on the PUMA built as the node builds it, and with the demo's
payload put on as the node puts on its payload parameters; an independent
ascent (numpy's SVD) that must stay below each upper end.
"""
import numpy as np
import pytest

from kc_ascent import independent_ascent
from robot_dynamics_ros.demo.monitor import PUMA
from robot_dynamics_ros.demo.puma import CERTIFICATES
from robot_dynamics_ros.dynamics import puma_urdf
from robot_dynamics_ros.dynamics.kc.certificate import certificate_for, verify
from robot_dynamics_ros.served.model import Payload, load_description

REGENERATE = "run scripts/demo_certificates.py again"


def demo_models():
    """The node's two models in the demo: the PUMA, then with the demo's payload."""
    served = load_description(puma_urdf())
    payload = PUMA.payload
    heavy = served.with_payload(Payload.create(payload["payload.link"], payload["payload.mass"],
                                               payload["payload.com"], payload["payload.inertia"]))
    return {"puma560": served.model, "puma560_demo_payload": heavy.model}


@pytest.mark.parametrize("name", ["puma560", "puma560_demo_payload"])
@pytest.mark.slow
def test_the_demo_certificates_hold_for_the_demos_models(name, tmp_path):
    model = demo_models()[name]
    path = CERTIFICATES / f"{name}.kc.json"
    found = certificate_for(model, CERTIFICATES)  # the node's search of the folder by model hash
    assert found is not None and found.path == path, f"no certificate for {name} in {CERTIFICATES}: {REGENERATE}"
    checked = verify(path, model, parallel=False)
    assert (checked.lower, checked.upper) == (found.lower, found.upper)
    assert checked.upper <= 1.05 * checked.lower * (1 + 1e-12)  # what the demo shows: tight
    best, where = independent_ascent(model, puma_urdf(), extra_starts=[found.witness], samples=300, starts=1)
    assert checked.lower <= best * (1 + 1e-9) and best <= checked.upper, (best, where.tolist())


def test_the_two_demo_models_are_two_certificates():
    models = demo_models()
    paths = {certificate_for(model, CERTIFICATES).path for model in models.values()}
    assert len(paths) == 2
    assert sorted(p.name for p in CERTIFICATES.glob("*.kc.json")) == sorted(f"{n}.kc.json" for n in models)
    assert not np.isclose(*(certificate_for(m, CERTIFICATES).upper for m in models.values()))
