"""What the node serves and the replay replays, checked without ROS: robot
descriptions and payload requests made into ``Model``s (``model``), and a
floating base's odometry paired with joint states (``base_state``).

Imports only ``dynamics``.
"""
