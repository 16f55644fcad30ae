"""The model service without ROS: whole requests or nothing, one builder, atomic swaps.

Outputs are checked against Pinocchio; the threading contract with a
``prepare`` that the test holds until it lets go, so that "the builder is
busy" is a state the test controls instead of a race it hopes for.
"""
import gc
import math
import threading
import time
import weakref

import numpy as np
import pytest

import robots
from robot_dynamics_ros.dynamics import all_terms, puma_urdf
from robot_dynamics_ros.node.model_service import PAYLOAD_PARAMETERS, ModelService, RequestRefused, Snapshot
from robot_dynamics_ros.served.model import Payload
from urdf_snippets import elbow, urdf

LINK = "link6"
PAYLOAD = (LINK, 2.0, [0.0, 0.01, 0.05], [0.004, 0.0, 0.0, 0.005, 0.0, 0.003])
DEFAULTS = {"publish_christoffel": False, "payload.link": "", "payload.mass": 0.0,
            "payload.com": [0.0, 0.0, 0.0], "payload.inertia": [0.0] * 6}


def parameters(link, mass, com, inertia):
    return {"payload.link": link, "payload.mass": mass, "payload.com": com,
            "payload.inertia": inertia}


def wait_until(predicate, timeout=30.0):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.005)


def oracle(*payloads):
    model = robots.load_pinocchio(puma_urdf())
    for link, mass, com, six in payloads:
        model = robots.add_payload_pinocchio(model, link, mass, com, robots.inertia3(six))
    return robots.PinocchioOracle(model, robots.pinocchio_joint_names(model))


def assert_serves(live, *payloads):
    """The snapshot's model gives Pinocchio's M, g and C with exactly ``payloads``."""
    want = oracle(*payloads)
    q, qd = np.linspace(-1.0, 1.0, 6), np.linspace(0.5, -1.5, 6)
    terms = all_terms(live.served.model, q, qd)
    assert robots.rel_err(terms.mass_matrix, want.mass_matrix(q)) < 1e-10
    assert robots.rel_err(terms.gravity_torques, want.gravity_torques(q)) < 1e-10
    assert robots.rel_err(terms.coriolis_matrix, want.coriolis_matrix(q, qd)) < 1e-10
    assert sorted(live.served.payloads) == sorted(p[0] for p in payloads)


class Gate:
    """A ``prepare`` that blocks until opened, counting the snapshots it made."""

    def __init__(self, open_=True):
        self.opened = threading.Event()
        if open_:
            self.opened.set()
        self.entered = threading.Semaphore(0)
        self.prepared = []

    def __call__(self, served, previous):
        self.entered.release()
        assert self.opened.wait(30.0)
        self.prepared.append(Snapshot(served))
        return self.prepared[-1]


@pytest.fixture
def service():
    gate = Gate()
    reports = []
    svc = ModelService(parameters=DEFAULTS, prepare=gate, report=reports.append)
    svc.gate, svc.reports = gate, reports
    svc.start()
    svc.request_description("test", puma_urdf)
    wait_until(lambda: svc.live is not None and not svc.update_pending)
    gate.entered = threading.Semaphore(0)  # count the builds the test asks for
    yield svc
    gate.opened.set()
    svc.stop()


def test_a_refused_parameter_request_changes_nothing(service):
    """Issue 13 item 6: publish_christoffel in a request whose payload is refused."""
    before = service.live
    with pytest.raises(RequestRefused, match="negative mass"):
        service.set_parameters({"publish_christoffel": True,
                                **parameters(LINK, -5.0, [0, 0, 0], [0.01, 0, 0, 0.01, 0, 0.01])})
    assert dict(service.parameters) == DEFAULTS
    assert service.live is before and not service.update_pending
    assert service.refused["payload_parameters"] == 1
    assert "negative mass" in service.reports[-1]


@pytest.mark.parametrize("bad", [
    parameters(LINK, 1e200, [0, 0, 0], [0.01, 0, 0, 0.01, 0, 0.01]),
    parameters(LINK, 1.0, [1e200, 0, 0], [0.01, 0, 0, 0.01, 0, 0.01]),
    parameters(LINK, 1.0, [0, 0, 0], [1e308, 0, 0, 1e308, 0, 1e308]),
    parameters(LINK, 1.0, [0, 0, 0], [0.01, 0, 0, 0.01, 0]),
    parameters("no_such_link", 1.0, [0, 0, 0], [0.01, 0, 0, 0.01, 0, 0.01]),
    parameters(LINK, math.nan, [0, 0, 0], [0.01, 0, 0, 0.01, 0, 0.01]),
], ids=["mass-1e200", "com-1e200", "inertia-1e308", "five-inertia-values", "unknown-link", "nan"])
def test_every_bad_payload_is_refused_with_nothing_changed(service, bad):
    before = service.live
    with pytest.raises(RequestRefused):
        service.set_parameters(bad)
    with pytest.raises(RequestRefused):
        service.request_payload(lambda: Payload.create(*(bad[name] for name in PAYLOAD_PARAMETERS)))
    assert dict(service.parameters) == DEFAULTS
    assert service.live is before and not service.update_pending
    assert service.refused["payload_parameters"] == 1 and service.refused["payload_topic"] == 1


def test_accepted_payload_is_served_and_mass_zero_removes_it(service):
    service.set_parameters({"publish_christoffel": True, **parameters(*PAYLOAD)})
    assert service.parameters["publish_christoffel"] is True
    wait_until(lambda: not service.update_pending)
    assert_serves(service.live, PAYLOAD)
    service.set_parameters({"payload.mass": 0.0})
    wait_until(lambda: not service.update_pending)
    assert_serves(service.live)


def test_the_default_payload_parameters_can_be_set_back(service):
    """A fresh node's parameters (no link, mass 0), set back after a payload
    was removed, are taken and change nothing (they were refused: no link '')."""
    service.set_parameters(parameters(*PAYLOAD))
    service.set_parameters({"payload.mass": 0.0})
    wait_until(lambda: not service.update_pending)
    served = service.live
    service.set_parameters(DEFAULTS)
    assert dict(service.parameters) == DEFAULTS and service.refused["payload_parameters"] == 0
    assert service.live is served and not service.update_pending
    assert_serves(service.live)


def test_the_snapshot_is_swapped_only_when_complete(service):
    """While the builder prepares the new model, readers keep the old
    snapshot; then they get the new one in one assignment."""
    old = service.live
    service.gate.opened.clear()
    service.set_parameters(parameters(*PAYLOAD))
    assert service.gate.entered.acquire(timeout=30.0)  # the builder is inside prepare
    for _ in range(20):
        assert service.live is old and service.update_pending
        time.sleep(0.005)
    service.gate.opened.set()
    wait_until(lambda: not service.update_pending)
    assert service.live is service.gate.prepared[-1] and service.live is not old
    assert_serves(service.live, PAYLOAD)


def test_requests_made_while_building_are_folded_into_one_model(service):
    """The builder serves the newest requests; intermediate ones cost no model."""
    service.gate.opened.clear()
    service.set_parameters(parameters(*PAYLOAD))
    assert service.gate.entered.acquire(timeout=30.0)
    built_before = len(service.gate.prepared)
    for mass in (0.5, 1.0, 1.5, 2.5):
        service.set_parameters({"payload.mass": mass})
    service.gate.opened.set()
    wait_until(lambda: not service.update_pending)
    assert len(service.gate.prepared) == built_before + 2  # the one held, then the newest
    assert_serves(service.live, (LINK, 2.5) + PAYLOAD[2:])


def test_bad_description_keeps_the_last_good_model(service):
    old = service.live
    for text in ('<robot name="r"><link name="a"/></robot>',
                 urdf(joints=elbow(origin='<origin xyz="1e200 0 0"/>'))):
        service.request_description("test", lambda text=text: text)
        wait_until(lambda: not service.update_pending)
        assert service.live is old
    assert service.refused["description"] == 2
    assert "no moving joints" in service.reports[-2]
    assert "elbow" in service.reports[-1]


def test_a_failing_prepare_keeps_the_builder_alive(service):
    old = service.live

    def broken(served, previous):
        raise ArithmeticError("numerics failed")

    service._prepare = broken
    service.set_parameters(parameters(*PAYLOAD))
    wait_until(lambda: not service.update_pending)
    assert service.live is old and service.refused["model_failed"] == 1
    service._prepare = service.gate
    service.set_parameters({"payload.mass": 1.0})
    wait_until(lambda: not service.update_pending)
    assert_serves(service.live, (LINK, 1.0) + PAYLOAD[2:])


def test_payload_invalid_for_a_new_description_is_dropped(service):
    """Accepted for the PUMA, its link is missing from the next robot."""
    service.set_parameters(parameters(*PAYLOAD))
    wait_until(lambda: not service.update_pending)
    other = robots.example_robot_urdf("ur5_robot")
    service.request_description("test", lambda: robots.urdf_text(other))
    wait_until(lambda: not service.update_pending)
    assert service.live.served.model.name.startswith("ur5")
    assert dict(service.live.served.payloads) == {}
    assert service.refused["payload_dropped"] == 1


def test_a_replaced_model_is_freed_at_the_swap():
    """Issue 24 item 7: a model in use is in reference cycles (its K_c
    refinement holds it); with the automatic collections off, the payload
    model a swap replaced is gone once the new one is served, so a node that
    swaps every few seconds for days holds one model, not a pile of them."""
    service = ModelService(parameters=DEFAULTS)
    service.start()
    try:
        service.request_description("test", puma_urdf)
        wait_until(lambda: service.live is not None and not service.update_pending)
        service.set_parameters(parameters(*PAYLOAD))
        wait_until(lambda: not service.update_pending)
        model = service.live.served.model
        all_terms(model, np.zeros(6), np.ones(6))  # the bounds make its refinement
        replaced = weakref.ref(model)
        del model
        heavier = (LINK, 3.0) + PAYLOAD[2:]
        gc.disable()
        try:
            service.set_parameters(parameters(*heavier))
            wait_until(lambda: not service.update_pending)
            assert replaced() is None
            assert_serves(service.live, heavier)
        finally:
            gc.enable()
    finally:
        service.stop()
