"""No baselines: first-fit decreasing (:mod:`.methods`) is itself the packing family's baseline.

The other families compare a paper's algorithm with the baselines the paper names; ``packing``
has no paper and no algorithm beyond FFD, which is the classical baseline of the exact ILP.  A
weaker "first fit in input order" would add a row that carries no guarantee at all (in ``weight``
mode one heavy, worthless job first can block every other job) and would only measure the
instance file's order, so none is registered.
"""
