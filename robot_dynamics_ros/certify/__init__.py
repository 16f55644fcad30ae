"""``robot_dynamics_certify``: K_c certificates computed offline on the
distributed engine (Dask distributed), checkpointed, and checked again.
Needs ``distributed`` (``pip install robot_dynamics_ros[certify]``); the
node and the replay only read certificates (``dynamics.kc.certificate``).

Imports ``served``, ``cluster`` and ``dynamics``.
"""
