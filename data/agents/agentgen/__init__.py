"""Generator of the agent-trajectory development corpus (see ``data/agents/README.md``).

Every hack kind and every clean look-alike is one function registered with ``@hack`` or
``@clean`` in a module of ``agentgen.kinds``; adding a kind is adding such a function.
"""
