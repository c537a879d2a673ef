"""The judging feature."""
