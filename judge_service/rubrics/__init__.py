"""The rubrics feature."""
