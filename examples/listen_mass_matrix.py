"""Print the next mass matrix that the robot_dynamics node publishes."""
import numpy as np
import rclpy
from std_msgs.msg import Float64MultiArray

rclpy.init()
node = rclpy.create_node("mass_matrix_listener")
received = []


def on_mass_matrix(msg):
    rows, columns = msg.layout.dim[0].size, msg.layout.dim[1].size  # row-major
    received.append(np.array(msg.data).reshape(rows, columns))


node.create_subscription(Float64MultiArray, "/robot_dynamics/mass_matrix", on_mass_matrix, 10)
for _ in range(30):
    rclpy.spin_once(node, timeout_sec=1.0)
    if received:
        np.set_printoptions(precision=3, suppress=True)
        print(received[0])
        break
else:
    print("no /robot_dynamics/mass_matrix within 30 s: is the node running, and fed joint_states?")
node.destroy_node()
rclpy.shutdown()
