"""The node serves a K_c certificate from its first output.

A certificate for the PUMA is made by ``robot_dynamics_certify`` (its real
local Dask cluster, a loose gap so that it takes seconds) into a directory;
the node gets the directory as ``kc_certificate``. Its first DynamicsState
must carry the certificate's interval exactly and ``~/model`` name the
certificate; a payload swap makes another model, which no certificate
covers: its revision is served with its own first bound. A range
certificate (``--payload-range``) serves every payload swap inside it.
"""

import json
import subprocess
import sys

import numpy as np
import pytest
from rclpy.parameter import Parameter

import ros_harness as harness
from robot_dynamics_ros.dynamics import load_urdf, puma_urdf
from robot_dynamics_ros.dynamics.kc import refinement_for

STARTUP_TIMEOUT = 180.0
NAME = "puma560_mohan_saha"


@pytest.fixture(scope="module")
def certified(tmp_path_factory):
    folder = tmp_path_factory.mktemp("certificates")
    urdf = folder / "puma.urdf"
    urdf.write_text(puma_urdf())
    output = folder / "puma.kc.json"
    run = subprocess.run([sys.executable, "-m", "robot_dynamics_ros.certify.cli", str(urdf), "--gap", "3",
                          "--workers", "1", "--quiet", "-o", str(output)],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    return urdf, output, json.loads(output.read_text())


def test_first_output_carries_the_certificate_and_a_new_payload_its_first_bound(certified, tmp_path):
    urdf, certificate, document = certified
    harness.isolate_ros_environment()
    peer = harness.Peer()
    node = harness.NodeProcess("-p", f"urdf_file:={urdf}", "-p", f"kc_certificate:={certificate.parent}",
                               log_path=tmp_path / "node.log")
    try:
        peer.wait_for_model(NAME, STARTUP_TIMEOUT, node)
        names = list(load_urdf(puma_urdf()).joint_names)
        first = peer.compute(names, np.zeros(6), np.ones(6))["state"]
        assert (first.kc_global, first.kc_global_lower) == (document["kc_global"], document["kc_global_lower"])
        model = peer.messages("model")[-1]
        assert model.revision == first.model_revision
        assert (model.kc_source, model.kc_certificate) == ("certificate", str(certificate))
        assert (model.kc_global, model.kc_global_lower) == (document["kc_global"], document["kc_global_lower"])
        # 2 kg on link6: another model, no certificate for it
        [result] = peer.set_parameters([
            Parameter("payload.link", value="link6"), Parameter("payload.mass", value=2.0),
            Parameter("payload.com", value=[0.0, 0.0, 0.05]),
            Parameter("payload.inertia", value=[0.002, 0.0, 0.0, 0.002, 0.0, 0.001])], atomically=True)
        assert result.successful, result.reason
        peer.diagnostics(lambda v: v["payloads"] == "link6:2kg" and v["update_pending"] == "no", 60.0)
        heavy = peer.compute(names, np.zeros(6), np.ones(6))["state"]
        assert heavy.model_revision > first.model_revision
        model = [m for m in peer.messages("model") if m.revision == heavy.model_revision][-1]
        assert (model.kc_source, model.kc_certificate) == ("first_bound", "")
        own = refinement_for(load_urdf(puma_urdf()).with_payload(
            "link6", 2.0, np.array([0.0, 0.0, 0.05]), np.diag([0.002, 0.002, 0.001]))).first_bound
        assert heavy.kc_global == pytest.approx(own, rel=1e-12)
    finally:
        node.stop()
        peer.close()


def test_replay_serves_the_certificate_to_every_message(certified, tmp_path):
    from bag_files import Trajectory, decode_outputs, read_bag, write_joint_state_bag

    from robot_dynamics_ros.replay.cli import main as replay_main

    urdf, certificate, document = certified
    trajectory = Trajectory(str(urdf), 0.5, 100.0, seed=3)
    source, target = tmp_path / "puma_in", tmp_path / "puma_out"
    write_joint_state_bag(source, "mcap", trajectory)
    assert replay_main([str(source), str(target), "--kc-certificate", str(certificate.parent), "--quiet"]) == 0
    out = decode_outputs(read_bag(target))
    bounds = out["coriolis_bounds"]
    fields = harness.BOUNDS_FIELDS
    assert set(bounds[:, fields.index("kc_global")]) == {document["kc_global"]}
    assert set(bounds[:, fields.index("kc_global_lower")]) == {document["kc_global_lower"]}
    (model,) = out["models"]
    assert (model.kc_source, model.kc_certificate) == ("certificate", str(certificate))
    # a file made for another robot is refused, and nothing is written
    other = tmp_path / "other.kc.json"
    other.write_text(certificate.read_text().replace(document["model_hash"], "0" * 64))
    assert replay_main([str(source), str(tmp_path / "refused"), "--kc-certificate", str(other),
                        "--quiet"]) == 1
    assert not (tmp_path / "refused").exists()


@pytest.mark.slow
def test_a_payload_swap_inside_a_certified_range_is_served_the_ranges_bound(tmp_path):
    """A range certificate (``--payload-range``, a 4-joint chain, 28 small
    searches) in the node's ``kc_certificate`` directory: without a payload
    and with one inside the range, every revision is served the range's
    upper end from its first output; a payload heavier than the range gets
    its own first bound."""
    from robots import named_urdf

    urdf = tmp_path / "chain.urdf"
    urdf.write_text(named_urdf("chain-31-4"))
    folder = tmp_path / "certificates"
    folder.mkdir()
    output = folder / "chain-range.kc.json"
    run = subprocess.run([sys.executable, "-m", "robot_dynamics_ros.certify.cli", str(urdf), "--payload-range",
                          "l7_317", "2", "-0.05", "0.05", "-0.02", "0.04", "0", "0.1", "--gap", "1.5",
                          "--workers", "1", "--quiet", "-o", str(output)],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    document = json.loads(output.read_text())
    model = load_urdf(urdf)
    names = list(model.joint_names)
    harness.isolate_ros_environment()
    peer = harness.Peer()
    node = harness.NodeProcess("-p", f"urdf_file:={urdf}", "-p", f"kc_certificate:={folder}",
                               log_path=tmp_path / "node.log")

    def swap(mass):
        [result] = peer.set_parameters([
            Parameter("payload.link", value="l7_317"), Parameter("payload.mass", value=mass),
            Parameter("payload.com", value=[0.0, 0.01, 0.05]),
            Parameter("payload.inertia", value=[0.001, 0.0, 0.0, 0.001, 0.0, 0.0005])], atomically=True)
        assert result.successful, result.reason
        peer.diagnostics(lambda v: v["payloads"] == f"l7_317:{mass:g}kg" and v["update_pending"] == "no", 60.0)
        return peer.compute(names, np.zeros(len(names)), np.ones(len(names)))["state"]

    try:
        peer.wait_for_model(model.name, STARTUP_TIMEOUT, node)
        first = peer.compute(names, np.zeros(len(names)), np.ones(len(names)))["state"]
        assert first.kc_global == document["kc_global"]
        inside = swap(1.5)
        assert inside.model_revision > first.model_revision and inside.kc_global == document["kc_global"]
        served = [m for m in peer.messages("model") if m.revision == inside.model_revision][-1]
        assert (served.kc_source, served.kc_certificate) == ("certificate", str(output))
        assert 0.0 < inside.kc_global_lower <= inside.kc_global
        heavy = swap(3.0)
        served = [m for m in peer.messages("model") if m.revision == heavy.model_revision][-1]
        assert (served.kc_source, served.kc_certificate) == ("first_bound", "")
    finally:
        node.stop()
        peer.close()
