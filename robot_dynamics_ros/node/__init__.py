"""The ``robot_dynamics`` node: ROS wiring (``dynamics_node``) around what
it serves (``model_service``), its status and loss counting, the K_c
refinement worker, the ``~/identify_payload`` service, spinning and the
``robot_dynamics_node`` command line.

Imports ``messages``, ``served``, ``identification`` and ``dynamics``; this
file imports nothing, so ``python -m robot_dynamics_ros.node.kc_refinement``
and ``--help`` start without rclpy.
"""
