"""``robot_dynamics_replay``: rosbag2 bags replayed through the dynamics
offline: the bag's inputs (``inputs``, ``bags``), one run (``run``), outputs
staged and moved into place (``staging``), ``--csv`` (``table``),
``--plot`` (``plot``), ``--residuals`` and ``--identify-payload``
(``analysis``), and fleets of bags on the distributed engine (``fleet``).

Imports ``messages``, ``served``, ``identification``, ``cluster`` and
``dynamics``.
"""
