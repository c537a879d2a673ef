"""Episodes over a world: the service around :mod:`judge_service.world`.

``world/`` learns a world from traces and answers tool calls; this package plays episodes
over it: the script of a task (``script.py``), the episode engine (``episode.py``), the
simulated user (``user.py``, ``user_turns.py``, ``client_user.py``), the models a step may
ask first (``client_*.py``), storage (``store*.py``, ``tables.py``), the routes
(``routes*.py``) and the reward (``web_reward.py``: the chain from a verdict to a reward).
It imports the world; the world imports nothing of it.
"""
