"""Tests of episodes."""
