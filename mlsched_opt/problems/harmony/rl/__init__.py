"""Harmony's learned placement: the policy's state encoding (:mod:`.features`), the networks and
the policy chooser (:mod:`.policy`, PyTorch), the trainer (:mod:`.train`), its options
(:mod:`.options`, light: the registry reads them) and the Gymnasium environment (:mod:`.gym_env`).
They stand on the family's simulator and heuristics; nothing outside this package imports it but
the ``drl`` method and ``mlsched train``, each when used."""
