"""rosbag2 bags for the replay's tests and benchmarks: a joint-state
trajectory written as a real bag with rosbags, and the outputs of a replay
read back with nothing but the definitions stored in the bag."""

from pathlib import Path

import numpy as np
from rosbags.rosbag2 import Reader, StoragePlugin, Writer
from rosbags.typesys import Stores, get_types_from_msg, get_typestore

import robots

TYPESTORE = get_typestore(Stores.ROS2_JAZZY)
STORAGES = {"sqlite3": StoragePlugin.SQLITE3, "mcap": StoragePlugin.MCAP}
PREFIX = "/robot_dynamics/"
BASE_TOPICS = {
    PREFIX + "state": "robot_dynamics_ros/msg/DynamicsState",
    PREFIX + "model": "robot_dynamics_ros/msg/DynamicsModel",
}
BOUNDS = ("coriolis_norm", "kc_config", "kc_global", "coriolis_bound", "m_eig_min", "m_eig_max",
          "kc_global_lower")
STAMP0 = 1_700_000_000  # header stamps start here (s)
BAG_DELAY_NS = 1_234_567  # bag time = header stamp + this: the two must stay apart



class Trajectory:
    """q(t) = c + a sin(2 pi f t + phi) inside the joint limits, and its exact qd(t)."""

    def __init__(self, urdf: str, duration: float, rate: float, seed: int = 0):
        self.urdf = robots.urdf_text(urdf)
        self.root_link = robots.urdf_root_link(self.urdf)
        self.pin_model = robots.load_pinocchio(self.urdf)
        self.joints = robots.pinocchio_joint_names(self.pin_model)
        self.oracle = robots.PinocchioOracle(self.pin_model, self.joints)
        rng = np.random.default_rng(seed)
        lo, hi = robots.joint_ranges(self.oracle, self.urdf).T
        n = len(self.joints)
        centre, amplitude = (lo + hi) / 2, 0.45 * (hi - lo)
        omega = 2 * np.pi * rng.uniform(0.05, 0.4, n)
        phase = rng.uniform(0, 2 * np.pi, n)
        self.t = np.arange(int(round(duration * rate))) / rate
        angle = np.outer(self.t, omega) + phase
        self.q = centre + amplitude * np.sin(angle)
        self.qd = amplitude * omega * np.cos(angle)
        # Stamps in integer ns: header stamp and bag time of message i.
        self.stamp_ns = STAMP0 * 10**9 + np.round(self.t * 1e9).astype(np.int64)
        self.bag_ns = self.stamp_ns + BAG_DELAY_NS
        # A recorder sees the driver's order, not the URDF's: shuffle, add an unmodelled joint.
        self.bag_names = list(rng.permutation(self.joints)) + ["unmodelled_joint"]
        self.take = np.array([self.joints.index(j) for j in self.bag_names[:-1]])


def write_joint_state_bag(path: Path, storage: str, traj: Trajectory, description: bool = True,
                          names=None, topic: str = "/joint_states", edit=None):
    """A rosbag2 bag with /robot_description (first) and the trajectory's joint states.

    ``edit(i, msg)``, when given, returns the rosbags message to write as message i.
    """
    JointState = TYPESTORE.types["sensor_msgs/msg/JointState"]
    Header = TYPESTORE.types["std_msgs/msg/Header"]
    Time = TYPESTORE.types["builtin_interfaces/msg/Time"]
    String = TYPESTORE.types["std_msgs/msg/String"]
    names = traj.bag_names if names is None else names
    extra = np.zeros(len(names) - len(traj.take))
    with Writer(path, version=8, storage_plugin=STORAGES[storage]) as writer:
        if description:
            conn = writer.add_connection("/robot_description", "std_msgs/msg/String", typestore=TYPESTORE)
            writer.write(conn, int(traj.bag_ns[0]) - 10**9,
                         TYPESTORE.serialize_cdr(String(data=traj.urdf), "std_msgs/msg/String"))
        conn = writer.add_connection(topic, "sensor_msgs/msg/JointState", typestore=TYPESTORE)
        for i, stamp in enumerate(traj.stamp_ns.tolist()):
            msg = JointState(
                header=Header(stamp=Time(sec=stamp // 10**9, nanosec=stamp % 10**9), frame_id=""),
                name=names,
                position=np.concatenate([traj.q[i, traj.take], extra]),
                velocity=np.concatenate([traj.qd[i, traj.take], extra]),
                effort=np.array([], dtype=np.float64))
            if edit is not None:
                msg = edit(i, msg)
            writer.write(conn, int(traj.bag_ns[i]), TYPESTORE.serialize_cdr(msg, "sensor_msgs/msg/JointState"))


class Bag(dict):
    """topic -> (msgtype, bag times, raw CDRs), and ``definitions``: msgtype ->
    the message definition stored in the bag."""

    definitions: dict


def read_bag(path: Path) -> Bag:
    out = Bag()
    out.definitions = {}
    with Reader(path) as reader:
        for conn in reader.connections:
            out.setdefault(conn.topic, (conn.msgtype, [], []))
            out.definitions[conn.msgtype] = conn.msgdef.data
        for conn, t, raw in reader.messages():
            out[conn.topic][1].append(t)
            out[conn.topic][2].append(raw)
    for topic, (msgtype, times, raws) in out.items():
        out[topic] = (msgtype, np.array(times, dtype=np.int64), raws)
    return out


def decode_outputs(bag: Bag) -> dict:
    """Every output message decoded with nothing but the definitions stored in
    the bag (a fresh typestore, as another tool reading it has): the
    DynamicsState fields as arrays, one row per message (``coriolis_bounds``
    in BOUNDS order), their names, stamps and frames, and the DynamicsModels."""
    store = get_typestore(Stores.EMPTY)
    for msgtype, definition in bag.definitions.items():
        store.register(get_types_from_msg(definition, msgtype))
    msgtype, times, raws = bag[PREFIX + "state"]
    states = [store.deserialize_cdr(raw, msgtype) for raw in raws]
    out = {name: np.array([getattr(m, name) for m in states])
           for name in ("position", "velocity", "mass_matrix", "coriolis_matrix")}
    out["gravity_torques"] = np.array([m.gravity for m in states])
    out["coriolis_bounds"] = np.array([[getattr(m, name) for name in BOUNDS] for m in states])
    if len(states[0].christoffel_symbols):
        out["christoffel_symbols"] = np.array([m.christoffel_symbols for m in states])
    out["joints"] = {tuple(m.names) for m in states}
    out["frames"] = {m.header.frame_id for m in states}
    out["revisions"] = {m.model_revision for m in states}
    out["stamps"] = np.array([m.header.stamp.sec * 10**9 + m.header.stamp.nanosec for m in states])
    out["state_times"] = times
    msgtype, out["model_times"], raws = bag[PREFIX + "model"]
    out["models"] = [store.deserialize_cdr(raw, msgtype) for raw in raws]
    return out
