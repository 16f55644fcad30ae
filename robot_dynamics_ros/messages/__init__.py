"""The node's and the replay's ROS messages as arrays and bytes: joint
states and payload requests matched into arrays (``inputs``), inputs read
straight from their serialized bytes (``cdr_inputs``), and every output
built from one template per stream (``outputs``, ``cdr``).

Imports ``served``, ``dynamics`` and the generated ``robot_dynamics_ros.msg``.
"""
