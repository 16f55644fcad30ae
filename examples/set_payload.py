"""Put a payload on a link through the node's parameter service: set_payload.py [LINK MASS]."""
import sys

import rclpy
from rclpy.parameter import Parameter
from rclpy.parameter_client import AsyncParameterClient

link, mass = (sys.argv[1], float(sys.argv[2])) if len(sys.argv) == 3 else ("link6", 2.0)
rclpy.init()
node = rclpy.create_node("payload_setter")
client = AsyncParameterClient(node, "/robot_dynamics")
if not client.wait_for_services(timeout_sec=30.0):
    sys.exit("no /robot_dynamics parameter services within 30 s: is the node running?")
# One atomic request, so the node checks and applies the four values together.
future = client.set_parameters_atomically([
    Parameter("payload.link", value=link),
    Parameter("payload.mass", value=mass),
    Parameter("payload.com", value=[0.0, 0.0, 0.05]),  # m, in the link frame
    Parameter("payload.inertia", value=[0.002, 0.0, 0.0, 0.002, 0.0, 0.001]),  # about the CoM
])
rclpy.spin_until_future_complete(node, future, timeout_sec=10.0)
if not future.done():
    sys.exit("no answer from /robot_dynamics within 10 s")
result = future.result().result
print(f"payload {mass:g} kg on {link}:", "accepted" if result.successful else f"refused: {result.reason}")
node.destroy_node()
rclpy.shutdown()
sys.exit(0 if result.successful else 1)
