"""The demo's K_c certificates: the embedded PUMA 560, without and with the
payload the demo puts on midway (``demo_monitor.PUMA.payload``), made by
``robot_dynamics_certify`` into ``robot_dynamics_ros/demo/certificates/``, where
the demo's node and its simulated PUMA find them by model hash
(``demo.puma.CERTIFICATES``). Run it again when the PUMA, the demo's payload
or the certificate method changes (``test/demo/test_demo_certificates.py`` fails
until then):

    .venv/bin/python scripts/demo_certificates.py [--workers N]
"""
import argparse
import sys
import tempfile
from pathlib import Path

from robot_dynamics_ros.certify.cli import main as certify
from robot_dynamics_ros.demo.monitor import PUMA
from robot_dynamics_ros.demo.puma import CERTIFICATES
from robot_dynamics_ros.dynamics import puma_urdf


def payload_arguments(payload: dict) -> list:
    """``--payload`` of the demo's payload parameters."""
    return ["--payload", payload["payload.link"], str(payload["payload.mass"]),
            *map(str, payload["payload.com"]), *map(str, payload["payload.inertia"])]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", default="2", help="the local cluster's workers (2)")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        urdf = Path(folder) / "puma560.urdf"
        urdf.write_text(puma_urdf())
        for name, extra in (("puma560", []), ("puma560_demo_payload", payload_arguments(PUMA.payload))):
            status = certify([str(urdf), *extra, "--workers", options.workers, "--quiet",
                              "-o", str(CERTIFICATES / f"{name}.kc.json")])
            if status:
                return status
    return 0


if __name__ == "__main__":
    sys.exit(main())
