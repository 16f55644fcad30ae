"""The robot as the algorithms see it: the URDF reader, the immutable
``Model`` and its compiled record, inertias, joint limits, the layout of the
Christoffel slices, and the checks that map q, qd, qdd and tau onto all joints.

Imports only ``dynamics.errors`` and ``dynamics.calls`` from outside this room.
"""
