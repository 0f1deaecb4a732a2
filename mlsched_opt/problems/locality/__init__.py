"""``locality`` (spec ``papers/001_locality_rounding.md``, Yu et al., IEEE TNSE 2022): work in progress.

Built so far: the per-job, per-deadline mixed packing/covering 0-1 program (:mod:`.pcilp`, as
arrays for HiGHS and as a Pyomo model) and its rounding (:mod:`.rounding`: RR-PC with the greedy
repair, and SMD-style scaled rounding for comparison), tested on the toy of spec section 7.
Not yet built, so the family is not registered: the instance view, the online wrappers
(V-Greedy, V-PD), the offline multi-job MILP, the baselines, the generator and the CLI.
"""
