"""``robot_dynamics_certify``: a K_c certificate for a URDF, computed on the
distributed engine, or ``--verify`` of one (docs/coriolis_constant.md,
"Certificates").

    robot_dynamics_certify URDF [--base auto|fixed|floating]
        [--payload LINK MASS X Y Z IXX IXY IXZ IYY IYZ IZZ]...
        [--payload-range LINK MASS_MAX XMIN XMAX YMIN YMAX ZMIN ZMAX] [--gap G]
        [--time-budget S] [--workers N | --scheduler ADDRESS]
        [--checkpoint DIR] [-o CERT]
    robot_dynamics_certify --verify CERT URDF [--base ...] [--payload ...]

``--payload``: the model carries that payload, as the node's ``payload.*``
parameters put it on (a certificate for one payload the robot will hold,
served by its model hash); ``--payload-range``: every payload in a range.

Exit status: 0 with a certificate written (or verified); 1 when
``--verify`` refuses the certificate (the reason on stderr); 2 for bad
arguments or input.
"""
from __future__ import annotations

import argparse
import math
import shutil
import sys
import time
from pathlib import Path

from robot_dynamics_ros.dynamics import DynamicsError, load_urdf
from robot_dynamics_ros.dynamics.kc.certificate import CertificateError, verify, write_certificate
from robot_dynamics_ros.dynamics.kc.payload_range import payload_range
from robot_dynamics_ros.served.model import PAYLOAD_ARGUMENTS, PAYLOAD_HELP, payload_from_arguments
from .engine import start_client
from .progress import Progress
from .ranges import certify_range
from .search import CheckpointMismatch, certify


def _positive(text):
    value = float(text)
    if not (value > 0 and math.isfinite(value) or value == math.inf):
        raise argparse.ArgumentTypeError(f"{text} is not a positive number")
    return value


def _gap(text):
    value = float(text)
    if not (1.0 <= value < math.inf):
        raise argparse.ArgumentTypeError(f"--gap {text}: a ratio upper / lower >= 1 is wanted")
    return value


def parser():
    p = argparse.ArgumentParser(
        prog="robot_dynamics_certify",
        description="Compute (or --verify) a certificate that K_c = sup_q k_c(q) over the joint limits "
        "of a URDF lies in [kc_global_lower, kc_global].")
    p.add_argument("paths", nargs="+", metavar="URDF",
                   help="the URDF file (with --verify: the certificate, then the URDF)")
    p.add_argument("--verify", action="store_true", help="re-check CERT for URDF without searching")
    p.add_argument("--base", choices=("auto", "fixed", "floating"), default="auto")
    p.add_argument("--payload", nargs=len(PAYLOAD_ARGUMENTS), action="append", default=[],
                   metavar=PAYLOAD_ARGUMENTS, help=PAYLOAD_HELP + "; repeat for more links")
    p.add_argument("--payload-range", nargs=8,
                   metavar=("LINK", "MASS_MAX", "XMIN", "XMAX", "YMIN", "YMAX", "ZMIN", "ZMAX"),
                   help="cover every payload on LINK of mass <= MASS_MAX whose matter lies in the box "
                   "(link frame, metres): 28 searches, one per vertex of a polytope around the range, "
                   "their certificates beside CERT")
    p.add_argument("--gap", type=_gap, default=1.05, help="stop at upper / lower <= G (default 1.05)")
    p.add_argument("--time-budget", type=_positive, default=math.inf, help="stop after S seconds of search")
    engine = p.add_mutually_exclusive_group()
    engine.add_argument("--workers", type=int, help="local cluster of N worker processes (default: all cores)")
    engine.add_argument("--scheduler", metavar="ADDRESS", help="a running Dask scheduler (tcp://host:8786)")
    p.add_argument("--checkpoint", metavar="DIR",
                   help="checkpoint directory, resumed when it holds this search (default: CERT.checkpoint, "
                   "removed once the certificate is written)")
    p.add_argument("--unit-seconds", type=_positive, default=2.0, help="work of one unit (default 2 s)")
    p.add_argument("-o", "--output", metavar="CERT", help="certificate file (default: URDF stem + .kc.json)")
    p.add_argument("--quiet", action="store_true", help="no progress line")
    return p


def main(argv=None):
    options = parser().parse_args(argv)
    if options.verify:
        if len(options.paths) != 2:
            print("robot_dynamics_certify: --verify CERT URDF", file=sys.stderr)
            return 2
        certificate, urdf = options.paths
    elif len(options.paths) != 1:
        print("robot_dynamics_certify: one URDF", file=sys.stderr)
        return 2
    else:
        urdf, certificate = options.paths[0], None
    if options.workers is not None and options.workers < 1:
        print("robot_dynamics_certify: --workers must be at least 1", file=sys.stderr)
        return 2
    try:
        model = load_urdf(Path(urdf), base=options.base)
        for values in options.payload:
            model = payload_from_arguments(values).apply_to(model)
    except (DynamicsError, OSError) as exc:
        print(f"robot_dynamics_certify: {urdf}: {exc}", file=sys.stderr)
        return 2
    if options.verify:
        start = time.monotonic()
        try:
            result = verify(certificate, model)
        except CertificateError as exc:
            print(f"robot_dynamics_certify: REFUSED: {exc}", file=sys.stderr)
            return 1
        print(f"{certificate}: holds for {urdf}: K_c in [{result.lower!r}, {result.upper!r}] "
              f"(checked in {time.monotonic() - start:.1f} s)")
        return 0
    payload = None
    if options.payload_range:
        link, *numbers = options.payload_range
        try:
            mass_max, xmin, xmax, ymin, ymax, zmin, zmax = map(float, numbers)
            payload = payload_range(model, link, mass_max, (xmin, ymin, zmin), (xmax, ymax, zmax))
        except (ValueError, DynamicsError) as exc:
            print(f"robot_dynamics_certify: --payload-range: {exc}", file=sys.stderr)
            return 2
    output = Path(options.output or Path(urdf).name.removesuffix(".urdf") + ".kc.json")
    checkpoint = Path(options.checkpoint) if options.checkpoint else output.with_name(output.name + ".checkpoint")
    client, cluster, workers = start_client(options.workers, options.scheduler)
    search = dict(gap=options.gap, time_budget=options.time_budget, client=client, workers=workers,
                  checkpoint_dir=checkpoint, unit_seconds=options.unit_seconds,
                  progress=Progress(quiet=options.quiet))
    try:
        if payload is None:
            document, leaves = certify(model, **search)
        else:
            document, leaves = certify_range(model, payload, output, **search), {}
    except CheckpointMismatch as exc:
        print(f"robot_dynamics_certify: {exc}", file=sys.stderr)
        return 2
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
    write_certificate(output, document, leaves)
    if not options.checkpoint:
        shutil.rmtree(checkpoint, ignore_errors=True)
    print(f"{output}: K_c in [{document['kc_global_lower']!r}, {document['kc_global']!r}], "
          f"gap {document['kc_global'] / document['kc_global_lower']:.4f}, {document['seconds']:.1f} s, "
          f"{document['work']['boxes_bounded']} boxes in {document['work']['units']} units on {workers} workers")
    return 0


if __name__ == "__main__":
    sys.exit(main())
