"""The local judge's names, apart from its server: a panel names it without starting anything."""

LOCAL_JUDGE_NAME = "local/smollm2-135m"
LOCAL_LITELLM_MODEL = "openai/smollm2"  # reached with its own api_base, never OPENAI_API_BASE
