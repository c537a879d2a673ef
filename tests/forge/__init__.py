"""Tests of forge."""
