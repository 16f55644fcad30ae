"""The recursive rigid-body algorithms, one file per algorithm: forward
kinematics, CRBA, RNEA, the Coriolis matrix, the Christoffel symbols,
forward dynamics and simulation, with the spatial algebra, the per-sample
loop and the finiteness check their kernels share.

Imports ``dynamics.model``, ``dynamics.calls`` and ``dynamics.errors``.
"""
