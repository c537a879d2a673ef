"""The local judge's names, and the rate its deadline warning assumes, apart from its server:
a panel names it without starting anything."""

LOCAL_JUDGE_NAME = "local/smollm2-135m"
LOCAL_LITELLM_MODEL = "openai/smollm2"  # reached with its own api_base, never OPENAI_API_BASE

#: Samples per second the answer's deadline warning assumes of the local judge. It is a
#: floor on purpose, the rate of the small CPU machine (two cores, busy) that embedded mode is
#: for: a batch it says may run out of time does so there, and a faster machine only finishes
#: sooner. Where the figure comes from: docs/benchmarks.md (the local judge).
LOCAL_JUDGE_SAMPLES_PER_S = 0.11
