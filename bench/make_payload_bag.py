"""Ground truth for the replay's residuals and payload identification: a rosbag2
bag of a robot carrying a known payload, with measured efforts.

The robot (an example-robot-data URDF) follows a trajectory given in closed
form, so q, qd and qdd are exact; the efforts are Pinocchio's inverse
dynamics (an engine independent of the package under test) of the robot
with the payload added to the link, plus Gaussian noise of a stated level:
``--noise`` times each joint's effort range (twice the URDF's effort limit).
Positions and velocities are written without noise (encoders).

Trajectories:
- ``exciting``: each joint a finite Fourier series (Swevers, Ganseman, Tukel,
  De Schutter and Van Brussel, 1997, "Optimal robot excitation and
  identification", IEEE Trans. Robotics and Automation): base frequency
  0.1 Hz, harmonics 1 to 4 with random amplitudes and phases, centred in the
  joint's range and kept inside 70% of it and below 1.5 rad/s.
- ``still``: every joint held at the middle of its range (no excitation: the
  payload's centre of mass along gravity cannot be seen).

The bag holds /robot_description (the URDF without the payload: what the
replay is given) and /joint_states (header stamps = bag times, uniform).
Usage:
    python bench/make_payload_bag.py OUT_BAG --robot panda --link panda_link8 \\
        --mass 2 --com 0.03 -0.02 0.06 [--duration 60 --rate 500 --noise 0.01]
"""
import argparse
import json
import os
import sys
from pathlib import Path

import numpy as np
import pinocchio as pin
from rosbags.rosbag2 import StoragePlugin, Writer
from rosbags.typesys import Stores, get_typestore

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "test", "support"))
from robots import example_robot_urdf, urdf_text  # noqa: E402

TYPESTORE = get_typestore(Stores.ROS2_JAZZY)
STORAGES = {"sqlite3": StoragePlugin.SQLITE3, "mcap": StoragePlugin.MCAP}
ROBOTS = {"panda": ("panda", "panda_link8"), "ur5": ("ur5_robot", "tool0")}
BASE_FREQUENCY = 0.1  # Hz
HARMONICS = 4
MAX_SPEED = 1.5  # rad/s
START = 1_700_000_000 * 10**9  # ns: the first joint state's stamp


def trajectory(lower, upper, times, kind: str, rng):
    """(q, qd, qdd), each (N, n), exact."""
    n = len(lower)
    middle, half_range = (lower + upper) / 2, (upper - lower) / 2
    q = np.tile(middle, (len(times), 1))
    qd, qdd = np.zeros_like(q), np.zeros_like(q)
    if kind == "still":
        return q, qd, qdd
    w = 2 * np.pi * BASE_FREQUENCY * np.arange(1, HARMONICS + 1)
    for j in range(n):
        amp = rng.uniform(0.3, 1.0, HARMONICS) / np.arange(1, HARMONICS + 1)
        phase = rng.uniform(0, 2 * np.pi, HARMONICS)
        scale = min(0.7 * half_range[j] / amp.sum(), MAX_SPEED / (amp * w).sum())
        arg = np.outer(times, w) + phase
        q[:, j] += scale * (np.sin(arg) @ amp)
        qd[:, j] = scale * (np.cos(arg) @ (amp * w))
        qdd[:, j] = -scale * (np.sin(arg) @ (amp * w * w))
    return q, qd, qdd


def pinocchio_with_payload(urdf: str, link: str, mass: float, com, inertia):
    model = pin.buildModelFromXML(urdf_text(urdf))
    if model.nq != model.nv:
        raise SystemExit(f"{urdf}: continuous joints are not supported by this generator")
    frame = model.frames[model.getFrameId(link)]
    if frame.name != link:
        raise SystemExit(f"no link {link!r} in {urdf}")
    payload = pin.Inertia(mass, np.asarray(com, float), np.asarray(inertia, float))
    model.inertias[frame.parentJoint] = model.inertias[frame.parentJoint] + frame.placement.act(payload)
    return model


def payload_samples(robot: str = "panda", link=None, mass: float = 2.0, com=(0.03, -0.02, 0.06),
                    inertia=None, duration: float = 60.0, rate: float = 500.0, noise: float = 0.01,
                    kind: str = "exciting", seed: int = 0):
    """(truth, stamps in ns, q, qd, effort): joint states of ``robot`` carrying
    a payload on ``link``, efforts from Pinocchio plus Gaussian noise of
    ``noise`` times each joint's effort range; the truth as
    ``write_payload_bag`` returns it."""
    urdf_name, default_link = ROBOTS[robot]
    link = link or default_link
    urdf = example_robot_urdf(urdf_name)
    if inertia is None:  # a solid box of 6 x 6 x 10 cm
        a, b, c = 0.06, 0.06, 0.10
        inertia = np.diag([b * b + c * c, a * a + c * c, a * a + b * b]) * mass / 12
    inertia = np.asarray(inertia, float)
    model = pinocchio_with_payload(urdf, link, mass, com, inertia)
    data = model.createData()
    names = [model.names[i] for i in range(1, model.njoints)]
    rng = np.random.default_rng(seed)
    count = int(round(duration * rate))
    times = np.arange(count) / rate
    q, qd, qdd = trajectory(model.lowerPositionLimit, model.upperPositionLimit, times, kind, rng)
    tau = np.array([pin.rnea(model, data, q[i], qd[i], qdd[i]) for i in range(count)])
    sigma = noise * 2 * np.asarray(model.effortLimit, float)
    effort = tau + rng.normal(size=tau.shape) * sigma
    stamps = START + np.round(times * 1e9).astype(np.int64)
    truth = {"robot": robot, "urdf": urdf, "link": link, "mass": mass, "com": list(map(float, com)),
             "inertia": inertia.tolist(), "joints": names, "noise_sigma": sigma.tolist(),
             "trajectory": kind, "samples": count, "rate": rate}
    return truth, stamps, q, qd, effort


def write_payload_bag(path: Path, storage: str = "mcap", **options) -> dict:
    """Write the bag of ``payload_samples(**options)`` (and the URDF on
    /robot_description); returns the truth (payload, noise level per joint,
    joints)."""
    truth, stamps, q, qd, effort = payload_samples(**options)
    urdf, names, start = truth["urdf"], truth["joints"], START
    JointState = TYPESTORE.types["sensor_msgs/msg/JointState"]
    Header = TYPESTORE.types["std_msgs/msg/Header"]
    Time = TYPESTORE.types["builtin_interfaces/msg/Time"]
    String = TYPESTORE.types["std_msgs/msg/String"]
    path.parent.mkdir(parents=True, exist_ok=True)
    with Writer(path, version=8, storage_plugin=STORAGES[storage]) as writer:
        conn = writer.add_connection("/robot_description", "std_msgs/msg/String", typestore=TYPESTORE)
        writer.write(conn, start - 10**9, TYPESTORE.serialize_cdr(String(data=urdf_text(urdf)),
                                                                  "std_msgs/msg/String"))
        conn = writer.add_connection("/joint_states", "sensor_msgs/msg/JointState", typestore=TYPESTORE)
        for i, stamp in enumerate(stamps.tolist()):
            msg = JointState(header=Header(stamp=Time(sec=stamp // 10**9, nanosec=stamp % 10**9), frame_id=""),
                             name=names, position=q[i], velocity=qd[i], effort=effort[i])
            writer.write(conn, stamp, TYPESTORE.serialize_cdr(msg, "sensor_msgs/msg/JointState"))
    return truth


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output", type=Path)
    parser.add_argument("--robot", choices=sorted(ROBOTS), default="panda")
    parser.add_argument("--link", help="payload link (default: the flange: panda_link8, tool0)")
    parser.add_argument("--mass", type=float, default=2.0)
    parser.add_argument("--com", type=float, nargs=3, default=(0.03, -0.02, 0.06))
    parser.add_argument("--duration", type=float, default=60.0)
    parser.add_argument("--rate", type=float, default=500.0)
    parser.add_argument("--noise", type=float, default=0.01, help="effort noise, fraction of the effort range")
    parser.add_argument("--trajectory", choices=("exciting", "still"), default="exciting")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--storage", choices=sorted(STORAGES), default="mcap")
    args = parser.parse_args()
    truth = write_payload_bag(args.output, storage=args.storage, robot=args.robot, link=args.link,
                              mass=args.mass, com=args.com, duration=args.duration, rate=args.rate,
                              noise=args.noise, kind=args.trajectory, seed=args.seed)
    truth.pop("urdf")
    print(json.dumps(truth, indent=1))


if __name__ == "__main__":
    main()
