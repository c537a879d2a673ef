"""Tests of rubrics."""
