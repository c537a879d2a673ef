"""The audit feature."""
