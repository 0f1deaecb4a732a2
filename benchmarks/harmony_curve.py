"""The learning curves of trained harmony policies (issue 21): validation average JCT against
training episodes, from the curve each policy file carries (``meta.curve``, written by
``mlsched train``), with the best heuristic of the same validation traces (the warm-up's teacher)
as a line.  Episode 0 is the policy right after the supervised warm-up, so the curve shows what
the improvement phase (``algo=rollout`` or ``ac``) adds to imitation.

    python benchmarks/harmony_curve.py models/harmony-drl.pt runs/harmony-hard.pt runs/harmony-gavel.pt \\
        --out docs/results/data/harmony_curve/harmony_curve.png

Reads the files with the same safe loader as ``--method drl`` (tensors and plain data only).
"""

from __future__ import annotations

import argparse
from pathlib import Path


def read_meta(path: str) -> dict:
    from mlsched_opt.problems.harmony.rl.policy import _read_policy_document

    return _read_policy_document(Path(path)).get("meta", {})


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("policies", nargs="+", help="policy files written by mlsched train")
    parser.add_argument("--out", default="docs/results/data/harmony_curve/harmony_curve.png")
    args = parser.parse_args(argv)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    metas = [read_meta(p) for p in args.policies]
    fig, axes = plt.subplots(1, len(metas), figsize=(4.2 * len(metas), 3.4), squeeze=False)
    for ax, meta, path in zip(axes[0], metas, args.policies):
        curve = meta["curve"]
        episodes, jct = zip(*curve)
        teacher = meta["teacher"]
        ax.plot(episodes, jct, marker="o", ms=3, label="drl (argmax), validation")
        ax.axhline(meta["heuristics_validation_jct"][teacher], color="grey", ls="--", label=f"{teacher} (teacher)")
        ax.set_title(f"{meta['world']} world, {meta['episodes']} episodes, {meta['train_s']:.0f} s")
        ax.set_xlabel("training episode (0: after the warm-up)")
        ax.set_ylabel("mean average JCT (intervals)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
        print(f"{path}: after warm-up {jct[0]:.2f}, best {min(jct):.2f} at episode {episodes[jct.index(min(jct))]}, "
              f"teacher {teacher} {meta['heuristics_validation_jct'][teacher]:.2f}")
    fig.tight_layout()
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.out, dpi=110)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
