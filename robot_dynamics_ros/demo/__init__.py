"""``robot_dynamics_demo``: the node on the embedded PUMA (``puma``) or a
quadruped (``quadruped``), driven by a simulated joint-state stream and
watched by a terminal monitor (``monitor``), in one command (``cli``).
``certificates/`` holds the PUMA's K_c certificates that its node serves.

Imports ``node``, ``dynamics`` and the generated messages.
"""
