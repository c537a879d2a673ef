"""Signal manufacture, pure: production traces and documents in, candidate training tasks out.

No storage, no HTTP, no model client: models are reached through callables the worker passes
in (:mod:`judge_service.forge.job`). scikit-learn does the near-duplicate merge and the
family clustering.
"""
