"""Print the next DynamicsState that the robot_dynamics node publishes, and its model."""
import numpy as np
import rclpy
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

from robot_dynamics_ros.msg import DynamicsModel, DynamicsState

rclpy.init()
node = rclpy.create_node("state_listener")
states, models = [], {}


def on_model(msg):
    models[msg.revision] = msg


node.create_subscription(DynamicsState, "/robot_dynamics/state", states.append, 10)
# ~/model is latched (transient local): a late subscriber still gets it.
node.create_subscription(DynamicsModel, "/robot_dynamics/model", on_model, QoSProfile(
    depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL))
for _ in range(30):
    rclpy.spin_once(node, timeout_sec=1.0)
    if states and states[0].model_revision in models:
        state, model = states[0], models[states[0].model_revision]
        n = len(state.names)
        np.set_printoptions(precision=3, suppress=True)
        print(f"joint state stamped {state.header.stamp.sec}.{state.header.stamp.nanosec:09d}, "
              f"model revision {state.model_revision} ({model.robot_name}, payloads: "
              f"{[p.header.frame_id for p in model.payloads] or 'none'})")
        print("q =", np.array(state.position))
        print("M(q) =\n", np.array(state.mass_matrix).reshape(n, n))
        print(f"||C|| = {state.coriolis_norm:.3f} <= k_c(q) ||qd|| = {state.coriolis_bound:.3f}; "
              f"K_c in [{state.kc_global_lower:.3f}, {state.kc_global:.3f}]")
        break
else:
    print("no /robot_dynamics/state within 30 s: is the node running, and fed joint_states?")
node.destroy_node()
rclpy.shutdown()
