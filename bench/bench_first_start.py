"""From the node's process start to its first ~/state, as a robot team meets it.

    python bench/bench_first_start.py [--robot panda] [--runs 3] [--cache empty|kept]
                                      [--installed | --workspace WS] [--python PATH] [--base floating]

Each run starts a peer (publishing the URDF is not needed: the node reads
``urdf_file``) that publishes one joint state every 10 ms, then starts the
node process (t0) and reports when the first ``~/state`` arrives, after t0.

``--cache empty`` gives every run a new, empty kernel cache
(``ROBOT_DYNAMICS_KERNEL_CACHE`` pointing at a fresh folder), which is a first start on a machine whose install
compiled nothing; ``kept`` leaves the environment as it is, which after an
install that compiled the kernels is the first start after it, and after a
first run is a later start.

``--installed`` runs the node of the installed package (``--python``'s, by
default this interpreter's) from a folder outside the checkout, as
``ros2 run`` would; ``--workspace`` the node a colcon workspace installed
(its ``install/`` on ``PYTHONPATH``, as its ``setup.bash`` puts it);
otherwise the checkout's node runs.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "test", "support"))
import robots  # noqa: E402
import ros_harness as harness  # noqa: E402

from robot_dynamics_ros.dynamics import load_urdf  # noqa: E402


def node_command(python: str, urdf: str, base: str):
    return [python, "-m", "robot_dynamics_ros.node.dynamics_node", "--ros-args",
            "-p", f"urdf_file:={urdf}", "-p", f"base:={base}"]


def one_run(python, urdf, model, base, folder: Path, installed: bool, empty_cache: bool):
    peer = harness.Peer(outputs=("state",))
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    # Python writes its bytecode as a robot's machine does (a first start
    # writes what the install did not), even where this shell says not to
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if installed:
        env.pop("PYTHONPATH", None)
        if installed is not True:  # a colcon workspace's install, as its setup.bash puts it on the path
            env["PYTHONPATH"] = installed
        cwd = folder
    else:
        env["PYTHONPATH"] = str(harness.REPO)
        cwd = harness.REPO
    if empty_cache:
        cache = Path(tempfile.mkdtemp(dir=folder, prefix="kernels-"))
        env["ROBOT_DYNAMICS_KERNEL_CACHE"] = str(cache)
    log = open(folder / "node.log", "w")
    q = np.zeros(len(model.joint_names))
    root = model.link_names[0]
    t0 = time.monotonic()
    node = subprocess.Popen(node_command(python, urdf, base), cwd=cwd, env=env, stdout=log,
                            stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = t0 + 180.0
        while peer.count("state") == 0 and time.monotonic() < deadline and node.poll() is None:
            if model.floating:
                peer.odom_pub.publish(harness.odometry(peer.upcoming_stamp(), [0, 0, 1, 0, 0, 0, 1],
                                                       [0] * 6, root))
            peer.joint_pub.publish(harness.joint_state(model.joint_names, q, stamp_=peer.next_stamp()))
            time.sleep(0.01)
        if peer.count("state") == 0:
            raise SystemExit(f"no ~/state within 180 s; the node's log:\n{(folder / 'node.log').read_text()}")
        with peer._lock:
            first = peer.received["state"][0][0] - t0
        time.sleep(0.5)  # what the node logs around its first output, too
        warnings = [line for line in (folder / "node.log").read_text().splitlines() if "WARN" in line]
        return first, warnings
    finally:
        node.send_signal(2)
        try:
            node.wait(10)
        except subprocess.TimeoutExpired:
            node.kill()
        log.close()
        peer.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--robot", default="panda")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--cache", choices=("empty", "kept"), default="kept")
    parser.add_argument("--installed", action="store_true")
    parser.add_argument("--workspace", help="a colcon workspace: run the node it installed")
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--base", default="auto")
    args = parser.parse_args()
    harness.isolate_ros_environment()
    urdf = robots.example_robot_urdf(args.robot)
    model = load_urdf(urdf, base=args.base)
    if args.workspace:
        version = f"python{sys.version_info.major}.{sys.version_info.minor}"
        args.installed = str(Path(args.workspace).resolve() / "install" / "robot_dynamics_ros" / "lib" / version
                             / "site-packages")
    where = "installed" if args.installed else "checkout"
    print(f"{args.robot}: {model.nv} dof, base {args.base}, the {where} node, cache {args.cache}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        for run in range(args.runs):
            first, warnings = one_run(args.python, urdf, model, args.base, Path(tmp), args.installed,
                                      args.cache == "empty")
            print(f"  run {run + 1}: first ~/state {first:.2f} s after the process start; "
                  f"{len(warnings)} warnings logged", flush=True)
            for line in warnings[:3]:
                print(f"    {line}")


if __name__ == "__main__":
    main()
