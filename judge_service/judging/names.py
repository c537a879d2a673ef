"""The local judge's names and measured rate, apart from its server: a panel names it without
starting anything."""

LOCAL_JUDGE_NAME = "local/smollm2-135m"
LOCAL_LITELLM_MODEL = "openai/smollm2"  # reached with its own api_base, never OPENAI_API_BASE

#: Samples per second of the local judge (llama-server, 4 slots), measured with
#: ``bench/local_judge.py`` on a shared, busy 2-core machine (docs/benchmarks.md).
MEASURED_SAMPLES_PER_S = 0.11
