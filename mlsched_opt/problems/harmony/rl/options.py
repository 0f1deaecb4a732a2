"""``mlsched train --problem harmony``'s options, apart from the trainer (:mod:`.train` imports
PyTorch through the policy; the family's registry entry needs only these, and every command
imports the registry: importing the trainer there cost each command a second and 190 MB)."""

from __future__ import annotations

from ...base import Option
from ..options import DEFER_MAX

#: training traces whose later arrivals are the futures rollouts sample from
FUTURE_POOL = 16

TRAIN_OPTIONS = (
    Option("world", "default", ("default", "hard", "gavel"), "interference world the traces run in", problem=True),
    Option("servers", 6, None, "M: servers per training trace", minimum=1, maximum=64),
    Option("jobs_min", 30, None, "fewest jobs per training trace", minimum=1, maximum=1000),
    Option("jobs_max", 60, None, "most jobs per training trace", minimum=1, maximum=1000),
    Option("load", 0.8, None, "generator load of the traces", minimum=0.01, maximum=2.0),
    Option("static", False, None, "train on static batches (every job at interval 0; spec 6a's training distribution)"),
    Option("reward", "jct", ("jct", "progress"), "minus the jobs in the system per interval, against the teacher's run "
           "(JCT-shaped), or Harmony's summed progress"),
    Option("speeds", "model", ("model", "true"),
           "episodes run at the learned reward model's speeds (faithful) or the true world's (control)"),
    Option("defer", DEFER_MAX, None, "the deferral rule the policy is trained under: a job may be held back within this many "
           "intervals of its arrival", minimum=0, maximum=10_000),
    Option("advice", True, None, "the policy sees its teacher's answer to each decision as an input (it starts as its "
           "teacher; rollout labels may move it off the advice)"),
    Option("algo", "rollout", ("rollout", "ac"), "after the warm-up: policy improvement by rollouts of the hold-back "
           "decisions (rollout) or actor-critic on the reward (ac)"),
    Option("probes", 16, None, "rollout: hold-back decisions re-simulated per episode", minimum=1, maximum=10_000),
    Option("futures", 4, None, "rollout: sampled futures each answer is scored in", minimum=1, maximum=FUTURE_POOL),
    Option("gamma", 0.95, None, "ac: discount over intervals", minimum=0.0, maximum=1.0),
    Option("lr", 3e-4, None, "Adam learning rate (actor and critic; DL2: 1e-4)", minimum=1e-8, maximum=1.0),
    Option("warmup", 20, None, "supervised warm-up passes over the best heuristic's decisions (0: none)", minimum=0, maximum=1000),
    Option("omega", 0.3, None, "initial job-aware exploration probability (0: entropy only)", minimum=0.0, maximum=1.0),
    Option("updates", 32, None, "gradient steps per episode", minimum=1, maximum=1000),
    Option("eval_every", 20, None, "episodes between validation runs", minimum=1, maximum=100_000),
    Option("validation", 8, None, "validation traces", minimum=1, maximum=100),
    Option("reward_traces", 8, None, "training traces the reward model's samples come from", minimum=1, maximum=1000),
)
