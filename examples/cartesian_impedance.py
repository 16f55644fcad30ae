"""A Cartesian impedance controller on /robot_dynamics/state: cartesian_impedance.py FRAME [CYCLES].

The node publishes FRAME's pose, Jacobian J and Jdot qd in each DynamicsState
(its frames parameter; the demo's node publishes the PUMA's link6), beside M,
C and g of the same q and qd. Paired with its joint state by stamp, as in
computed_torque.py, each cycle pulls the frame towards a target 5 cm below
where it was at the first cycle, orientation held, with a spring and a damper
in task space (e: position error, then the rotation error as an axis times
its angle, in the world-aligned axes of J's rows):

    tau = J^T (K e - D J qd) + C qd + g

and, where J has full row rank, the operational-space form (Khatib, "A
unified approach for motion and force control of robot manipulators: the
operational space formulation", IEEE J. Robotics and Automation 3(1), 1987),
which makes the frame's acceleration that of the spring and damper:

    Lambda = (J M^-1 J^T)^-1,  tau = J^T Lambda (KP e - KD J qd - Jdot qd) + C qd + g
"""
import sys
from collections import OrderedDict

import numpy as np
import rclpy
from sensor_msgs.msg import JointState

from robot_dynamics_ros.msg import DynamicsState

K = np.diag([400.0] * 3 + [40.0] * 3)  # N/m and N m/rad: the spring
D = np.diag([40.0] * 3 + [4.0] * 3)  # N s/m and N m s/rad: the damper
KP, KD = 100.0, 20.0  # 1/s^2, 1/s: the operational-space form's gains
STEP = np.array([0.0, 0.0, -0.05])  # m: the target, from the first cycle's position
BUFFER = 100  # unpaired messages kept per topic (0.1 s at 1 kHz)
frame = sys.argv[1] if len(sys.argv) > 1 else "link6"
cycles = int(sys.argv[2]) if len(sys.argv) > 2 else 10

rclpy.init()
node = rclpy.create_node("cartesian_impedance_example")
joint_states, states = OrderedDict(), OrderedDict()  # stamp -> message, oldest first
target = []  # (position, rotation) of the frame at the first cycle, then the target
done = []


def key(msg):
    return msg.header.stamp.sec, msg.header.stamp.nanosec


def rotation(o) -> np.ndarray:
    """The rotation matrix of a unit quaternion (geometry_msgs/Quaternion)."""
    x, y, z, w = o.x, o.y, o.z, o.w
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def axis_angle(R: np.ndarray) -> np.ndarray:
    """The rotation vector (axis times angle) of R, for angles below pi."""
    angle = np.arccos(np.clip((np.trace(R) - 1.0) / 2.0, -1.0, 1.0))
    axis = np.array([R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1]])
    return axis * (0.5 if angle < 1e-9 else angle / (2.0 * np.sin(angle)))


def control(joint_state: JointState, state: DynamicsState):
    if frame not in state.frame_names:
        raise SystemExit(f"the node publishes no frame {frame!r} (its frames: {list(state.frame_names)})")
    n, k = len(state.names), list(state.frame_names).index(frame)
    take = [list(joint_state.name).index(name) for name in state.names]  # the state's order
    qd = np.array(joint_state.velocity)[take] if len(joint_state.velocity) else np.zeros(n)
    M = np.array(state.mass_matrix).reshape(n, n)  # row-major
    C = np.array(state.coriolis_matrix).reshape(n, n)
    g = np.array(state.gravity)
    J = np.array(state.frame_jacobians[6 * n * k:6 * n * (k + 1)]).reshape(6, n)
    Jdot_qd = np.array(state.frame_jacobian_dot_v[6 * k:6 * (k + 1)])
    pose = state.frame_poses[k]
    x = np.array([pose.position.x, pose.position.y, pose.position.z])
    R = rotation(pose.orientation)
    if not target:
        target.extend((x + STEP, R))
    e = np.concatenate([target[0] - x, axis_angle(target[1] @ R.T)])
    tau = J.T @ (K @ e - D @ (J @ qd)) + C @ qd + g
    print(f"stamp {state.header.stamp.sec}.{state.header.stamp.nanosec:09d} "
          f"model {state.model_revision}: tau = {np.array2string(tau, precision=6)}")
    if np.linalg.matrix_rank(J) == 6:
        Lambda = np.linalg.inv(J @ np.linalg.solve(M, J.T))
        tau_os = J.T @ Lambda @ (KP * e - KD * (J @ qd) - Jdot_qd) + C @ qd + g
        print(f"  operational space: tau = {np.array2string(tau_os, precision=6)}")
    done.append(tau)


def arrived(msg, mine, other):
    """Keep ``msg`` until its partner (same stamp) arrives on the other topic."""
    stamp = key(msg)
    partner = other.pop(stamp, None)
    if partner is None:
        mine[stamp] = msg
        while len(mine) > BUFFER:
            mine.popitem(last=False)
    elif isinstance(msg, DynamicsState):
        control(partner, msg)
    else:
        control(msg, partner)


node.create_subscription(JointState, "joint_states", lambda m: arrived(m, joint_states, states), 10)
node.create_subscription(DynamicsState, "/robot_dynamics/state", lambda m: arrived(m, states, joint_states), 10)
for _ in range(300):
    rclpy.spin_once(node, timeout_sec=0.1)
    if len(done) >= cycles:
        break
else:
    print("no paired joint_states and /robot_dynamics/state within 30 s: is the node running?")
node.destroy_node()
rclpy.shutdown()
sys.exit(0 if len(done) >= cycles else 1)
