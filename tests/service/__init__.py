"""Tests of the whole service, end to end: the CLI, the API surface, chaos."""
