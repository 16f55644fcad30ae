"""K_c certificates (robot_dynamics_certify, dynamics.kc.certificate), on the
real engine: a local Dask cluster of two worker processes.

Oracles: an independent ascent (numpy's SVD, scipy's L-BFGS-B) that must
never exceed a certificate's upper end; the certificate's own re-check
(``--verify``), which must refuse a certificate whose bound was lowered,
one made for another model and one whose leaves were changed; and an
uninterrupted run against a run killed with SIGKILL and resumed.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from kc_ascent import independent_ascent
from robots import named_urdf
from robot_dynamics_ros.certify.cli import main as certify_main
from robot_dynamics_ros.certify.engine import start_client
from robot_dynamics_ros.certify.search import certify
from robot_dynamics_ros.dynamics import coriolis_bounds, load_urdf, puma_urdf
from robot_dynamics_ros.dynamics.kc.certificate import (CertificateError, certificate_for, serve_certificate,
                                                        verify, write_certificate)
from robot_dynamics_ros.dynamics.kc.partition import covers_domain
from robot_dynamics_ros.served.model import load_description, payload_from_arguments

REPOSITORY = Path(__file__).resolve().parents[2]
# a 4-joint chain: its first joint does not enter Gamma, 3 coordinates are searched
SMALL = "chain-31-4"


@pytest.fixture(scope="module")
def engine():
    client, cluster, workers = start_client(2)
    yield client, workers
    client.close()
    cluster.close()


def _write_urdf(directory, name):
    text = puma_urdf() if name == "puma" else named_urdf(name)
    path = Path(directory) / f"{name}.urdf"
    path.write_text(text if text.lstrip().startswith("<") else Path(text).read_text())
    return path


def _certificate(engine, model, directory, **options):
    client, workers = engine
    document, leaves = certify(model, client=client, workers=workers,
                               checkpoint_dir=Path(directory) / "checkpoint", **options)
    path = Path(directory) / "model.kc.json"
    write_certificate(path, document, leaves)
    return path, json.loads(path.read_text())


@pytest.mark.slow
@pytest.mark.parametrize("name, budget", [("puma", 2.0), ("ur5_robot", 2.0), ("panda", 2.0),
                                          ("chain-7-6", 2.0), ("tree-8-7", 2.0)])
def test_no_ascent_exceeds_a_certificate(engine, tmp_path, name, budget):
    """Certificates stopped by their time budget (so their upper ends are
    whatever the search had reached) are still bounds: an independent
    ascent from random starts and from the witness stays below."""
    urdf = _write_urdf(tmp_path, name)
    model = load_urdf(urdf)
    path, document = _certificate(engine, model, tmp_path, gap=1.05, time_budget=budget, unit_seconds=0.5)
    best, where = independent_ascent(model, str(urdf), extra_starts=[document["witness_q"]], samples=300,
                                     starts=1)
    assert best <= document["kc_global"], (best, where.tolist(), document["kc_global"])
    assert document["kc_global_lower"] <= best * (1 + 1e-9)
    assert verify(path, model).upper == document["kc_global"]


def _cli(*arguments, **popen):
    environment = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPOSITORY),
                                                                           os.environ.get("PYTHONPATH")])))
    return subprocess.Popen([sys.executable, "-m", "robot_dynamics_ros.certify.cli", *map(str, arguments)],
                            env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen)


@pytest.mark.slow
def test_a_search_killed_and_resumed_ends_as_an_uninterrupted_one(engine, tmp_path):
    """SIGKILL to the whole command (its local cluster too) once units have
    been merged; the same command resumes from the checkpoint and ends with
    a certificate that passes --verify and is at least as tight as an
    uninterrupted run's (the same leaves: the threshold is fixed at the
    start, so the order and cut of the work do not matter)."""
    urdf = _write_urdf(tmp_path, SMALL)
    model = load_urdf(urdf)
    (tmp_path / "whole").mkdir()
    # small units: many of them, so that the kill falls inside the search
    # however fast the machine (with 0.2 s units a quiet one finished first)
    _, whole = _certificate(engine, model, tmp_path / "whole", gap=1.005, unit_seconds=0.02)
    checkpoint, output = tmp_path / "checkpoint", tmp_path / "resumed.kc.json"
    arguments = (urdf, "--gap", "1.005", "--workers", "2", "--unit-seconds", "0.02", "--checkpoint", checkpoint,
                 "-o", output, "--quiet")
    process = _cli(*arguments, start_new_session=True)
    deadline = time.monotonic() + 120
    while len(list((checkpoint / "units").glob("*[0-9].npz"))) < 2 and process.poll() is None:
        assert time.monotonic() < deadline, "no unit was merged within 120 s"
        time.sleep(0.05)
    assert process.poll() is None, "the search ended before it could be killed: make it longer"
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    assert not output.exists()
    resumed = _cli(*arguments)
    out, err = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, err
    document = json.loads(output.read_text())
    assert document["kc_global"] <= whole["kc_global"]
    assert document["kc_global_lower"] >= whole["kc_global_lower"]
    assert document["parts"][0]["boxes"] == whole["parts"][0]["boxes"]
    assert document["work"]["boxes_bounded"] >= whole["work"]["boxes_bounded"]
    assert document["kc_global"] <= 1.005 * document["kc_global_lower"] * (1 + 1e-12)
    assert certify_main(["--verify", str(output), str(urdf)]) == 0


@pytest.fixture(scope="module")
def small_certificate(engine, tmp_path_factory):
    directory = tmp_path_factory.mktemp("certificate")
    urdf = _write_urdf(directory, SMALL)
    model = load_urdf(urdf)
    path, document = _certificate(engine, model, directory, gap=1.05, unit_seconds=0.5)
    return urdf, model, path, document


def _tampered(path, tmp_path, change):
    document = json.loads(Path(path).read_text())
    change(document)
    target = tmp_path / "tampered.kc.json"
    target.write_text(json.dumps(document))
    shutil.copy(Path(path).with_name(document["leaves_file"]), tmp_path / document["leaves_file"])
    return target


def _lowered(document, factor=0.99):
    document["kc_global"] *= factor
    for part in document["parts"]:
        part["upper"] *= factor


def test_verify_holds_and_refuses_a_bound_lowered_by_one_percent(small_certificate, tmp_path, capsys):
    urdf, model, path, document = small_certificate
    assert certify_main(["--verify", str(path), str(urdf)]) == 0
    only_total = _tampered(path, tmp_path, lambda d: d.update(kc_global=0.99 * d["kc_global"]))
    assert certify_main(["--verify", str(only_total), str(urdf)]) == 1
    assert "below what its parts give" in capsys.readouterr().err
    both = _tampered(path, tmp_path, _lowered)
    assert certify_main(["--verify", str(both), str(urdf)]) == 1
    assert "above the stated upper end" in capsys.readouterr().err
    raised = _tampered(path, tmp_path, lambda d: d.update(kc_global_lower=1.01 * d["kc_global_lower"]))
    with pytest.raises(CertificateError, match="above k_c at witness_q"):
        verify(raised, model)


def test_verify_refuses_another_model_and_changed_leaves(small_certificate, tmp_path):
    urdf, model, path, document = small_certificate
    narrower = re.sub(r'lower="([^"]+)"', lambda m: f'lower="{float(m.group(1)) + 0.1!r}"', urdf.read_text(),
                      count=1)
    assert narrower != urdf.read_text()
    other = load_urdf(narrower)
    with pytest.raises(CertificateError, match="another model"):
        verify(path, other)
    with pytest.raises(CertificateError, match="another model"):
        tip = next(link for link, (body, _) in model.link_frames.items() if body == model.nb - 1)
        verify(path, model.with_payload(tip, 1.0, [0.0, 0.0, 0.1], 0.01 * np.eye(3)))
    copy = _tampered(path, tmp_path, lambda d: None)
    leaves = tmp_path / document["leaves_file"]
    with np.load(leaves) as data:
        arrays = {name: data[name] for name in data.files}
    arrays["bounds_0"] = arrays["bounds_0"] * 0.5
    np.savez_compressed(leaves, **arrays)
    with pytest.raises(CertificateError, match="changed after it was made"):
        verify(copy, model)


def test_the_leaves_must_partition_the_domain():
    whole = (np.zeros((1, 2)), np.zeros((1, 2)))
    halves = (np.array([[1, 0], [1, 0]]), np.array([[0, 0], [1, 0]]))
    quarters = (np.array([[1, 0], [1, 1], [1, 1]]), np.array([[0, 0], [1, 0], [1, 1]]))
    assert covers_domain(*whole) and covers_domain(*halves) and covers_domain(*quarters)
    assert not covers_domain(halves[0][:1], halves[1][:1])  # a half is missing
    assert not covers_domain(np.array([[1, 0], [1, 0], [0, 0]]), np.array([[0, 0], [1, 0], [0, 0]]))  # overlap
    assert not covers_domain(np.array([[1, 0], [1, 0]]), np.array([[0, 0], [0, 0]]))  # the same half twice


def test_a_served_certificate_is_the_models_interval_from_the_first_output(small_certificate, tmp_path):
    urdf, _, path, document = small_certificate
    fresh = load_urdf(urdf)  # a model of the same description, as the node builds it
    certificate = serve_certificate(fresh, path.parent)  # a directory, searched by model hash
    assert certificate is not None and certificate.path == path
    bounds = coriolis_bounds(fresh, np.zeros(fresh.nq), np.ones(fresh.nv))
    assert bounds.kc_global == document["kc_global"]
    assert bounds.kc_global_lower == document["kc_global_lower"]
    other = load_urdf(puma_urdf())
    assert certificate_for(other, path.parent) is None
    with pytest.raises(CertificateError, match="another model"):
        certificate_for(other, path)


def test_a_model_served_by_its_certificate_computes_no_first_bound(small_certificate, monkeypatch):
    """What makes a certified model's first output cheap: no first bound
    (nor its compile) before it; the first bound is still there when asked."""
    from robot_dynamics_ros.dynamics.kc import first_bound, search

    urdf, _, path, document = small_certificate
    fresh = load_urdf(urdf)
    expected = first_bound.first_upper_bound(load_urdf(urdf))[0]  # an equal model, its own first bound
    calls = []
    monkeypatch.setattr(search, "first_upper_bound", lambda model: calls.append(model) or (expected, None))
    assert serve_certificate(fresh, path) is not None
    bounds = coriolis_bounds(fresh, np.zeros(fresh.nq), np.ones(fresh.nv))
    assert (bounds.kc_global, bounds.kc_global_lower) == (document["kc_global"], document["kc_global_lower"])
    assert calls == []
    refinement = search.refinement_for(fresh)
    assert refinement.interval.finished and refinement.first_bound == expected and calls == [fresh]


@pytest.mark.slow
def test_a_floating_base_keeps_its_first_bound_and_verifies(engine, tmp_path):
    """No box search applies to a floating base (its Gamma's structure in q
    is not the one the boxes use): the certificate states the first bound,
    and --verify checks that and the witness."""
    urdf = _write_urdf(tmp_path, "chain-4-3")
    model = load_urdf(urdf, base="floating")
    path, document = _certificate(engine, model, tmp_path, gap=1.05, time_budget=5.0)
    assert [part["kind"] for part in document["parts"]] == ["first_bound"]
    assert verify(path, model).upper == document["kc_global"]
    assert certify_main(["--verify", str(path), str(urdf), "--base", "floating"]) == 0
    assert certify_main(["--verify", str(path), str(urdf), "--base", "fixed"]) == 1


def test_a_payload_certificate_covers_the_model_the_node_serves_with_it(tmp_path, capsys):
    """--payload puts a payload on as the node's payload parameters do: the
    certificate is found for the node's model with that payload, says which
    payload it covers, and --verify refuses the model without it."""
    urdf = _write_urdf(tmp_path, SMALL)
    frames = load_urdf(urdf).link_frames
    link = max(frames, key=lambda name: frames[name][0])  # on the last body
    payload = [link, "1.5", "0", "0", "0.1", "0.01", "0", "0", "0.01", "0", "0.02"]
    output = tmp_path / "loaded.kc.json"
    assert certify_main([str(urdf), "--payload", *payload, "--gap", "2", "--workers", "1", "--quiet",
                         "-o", str(output)]) == 0
    served = load_description(urdf.read_text()).with_payload(payload_from_arguments(payload))
    found = certificate_for(served.model, tmp_path)
    assert found is not None and found.path == output
    assert json.loads(output.read_text())["payloads"] == {
        link: {"mass": 1.5, "com": [0.0, 0.0, 0.1], "inertia": [[0.01, 0.0, 0.0], [0.0, 0.01, 0.0], [0.0, 0.0, 0.02]]}}
    assert certify_main(["--verify", str(output), str(urdf), "--payload", *payload]) == 0
    capsys.readouterr()
    assert certify_main(["--verify", str(output), str(urdf)]) == 1
    assert "another model" in capsys.readouterr().err
    assert certify_main([str(urdf), "--payload", link, "heavy", *payload[2:], "-o", str(tmp_path / "x.json")]) == 2
    assert "--payload" in capsys.readouterr().err


@pytest.mark.parametrize("arguments, needle", [
    (["--verify", "only-one.json"], "--verify CERT URDF"),
    (["missing.urdf"], "missing.urdf"),
])
def test_bad_arguments_exit_with_status_2_and_say_why(arguments, needle, capsys):
    assert certify_main(arguments) == 2
    assert needle in capsys.readouterr().err


def test_a_gap_below_one_is_refused(capsys):
    with pytest.raises(SystemExit) as exit_info:
        certify_main(["x.urdf", "--gap", "0.9"])
    assert exit_info.value.code == 2
    assert ">= 1" in capsys.readouterr().err
