"""Certified norms: the Coriolis bounds of one state (||C||_2, k_c(q), the
eigenvalues of M) and the symmetric eigen-solvers, Lanczos and subspace
certificates behind them; ``terms_kernel`` computes every published term in
one pass.

Imports ``dynamics.algorithms``, ``dynamics.model``, ``dynamics.calls`` and
``dynamics.errors``.
"""
