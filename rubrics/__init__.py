"""Seed rubrics shipped with the service (installed as ``judge_service_rubrics``).

Each YAML file is one rubric: ``name``, ``description``, ``criteria`` (``id``, ``text``,
``weight``, optional ``tags``; a negative weight marks a pitfall) and optional ``prompts``
(judge prompt overrides). ``judge-service rubrics import`` loads them as versions.
"""
