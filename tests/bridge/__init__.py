"""Tests of trainer_bridge: the client and the trainer adapters."""
