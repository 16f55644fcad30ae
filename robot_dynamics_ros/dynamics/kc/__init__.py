"""The global Coriolis constant K_c = sup_q k_c(q): its first guaranteed
bound, the box search that tightens it, the subtrees searched apart, and
certificates computed offline (docs/coriolis_constant.md).

One module per job, each importing only the ones before it:
``constant`` (k_c at configurations), ``first_bound``, ``subtrees``,
``mixed`` (the certificate search's mixed-derivative bounds), ``boxes``
(bounds over boxes), ``search`` (the interval a model carries and
its refinement), ``partition`` (work units of the offline search),
``certificate`` (the file, its checks, finding one for a model).
"""
from .search import (CoriolisConstantRefinement, KcInterval, coriolis_constant_interval,
                     global_coriolis_constant, refinement_for)

__all__ = ["CoriolisConstantRefinement", "KcInterval", "coriolis_constant_interval",
           "global_coriolis_constant", "refinement_for"]
