"""The review queue and mining: items a human decides, and rubric items mined from runs."""
