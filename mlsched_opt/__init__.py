"""mlsched-opt: optimization models for scheduling distributed deep-learning jobs.

The package is laid out by concern:

``mlsched_opt.io``        instance, solution and workload-catalog files (reading, schema, writing)
``mlsched_opt.solvers``   one solve function over Pyomo models for HiGHS, CP-SAT and other solvers
``mlsched_opt.checking``  the independent checker core (feasibility and objective from a decision)
``mlsched_opt.problems``  one subpackage per problem family, plugged into a registry
``mlsched_opt.bench``     method comparison, ratios to the optimum, report tables
``mlsched_opt.cli``       the ``mlsched`` command
"""

__version__ = "0.1.0"
