"""A computed-torque controller on /robot_dynamics/state: computed_torque.py [CYCLES].

Each DynamicsState carries the stamp of the joint state it was computed from,
so the controller pairs the two by stamp (exactly, as message_filters'
ExactTime policy would; a dict keyed by stamp needs no other package) and
uses M, C and g of that very state: tau = M(q) qdd_ref + C(q, qd) qd + g(q),
with qdd_ref from a PD law that holds the joints at zero. Unpaired messages
wait in bounded buffers, so a lost message costs nothing but its cycle.
"""
import sys
from collections import OrderedDict

import numpy as np
import rclpy
from sensor_msgs.msg import JointState

from robot_dynamics_ros.msg import DynamicsState

KP, KD = 100.0, 20.0  # 1/s^2, 1/s: the PD law's gains
BUFFER = 100  # unpaired messages kept per topic (0.1 s at 1 kHz)
cycles = int(sys.argv[1]) if len(sys.argv) > 1 else 10

rclpy.init()
node = rclpy.create_node("computed_torque_example")
joint_states, states = OrderedDict(), OrderedDict()  # stamp -> message, oldest first
done = []


def key(msg):
    return msg.header.stamp.sec, msg.header.stamp.nanosec


def control(joint_state: JointState, state: DynamicsState):
    n = len(state.names)
    take = [list(joint_state.name).index(name) for name in state.names]  # the state's order
    q = np.array(joint_state.position)[take]
    qd = np.array(joint_state.velocity)[take] if len(joint_state.velocity) else np.zeros(n)
    M = np.array(state.mass_matrix).reshape(n, n)  # row-major
    C = np.array(state.coriolis_matrix).reshape(n, n)
    g = np.array(state.gravity)
    qdd_ref = -KP * q - KD * qd
    tau = M @ qdd_ref + C @ qd + g
    print(f"stamp {state.header.stamp.sec}.{state.header.stamp.nanosec:09d} "
          f"model {state.model_revision}: tau = {np.array2string(tau, precision=6)}")
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
