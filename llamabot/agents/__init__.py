"""The agents layer: bots built as graphs on the graph engine (``llamabot.graph``).

``GraphBot`` (the surface every graph bot shares: runs, streams, hooks, limits, approvals, deps, checkpoints),
the agent's nodes (``DecideNode`` picks tools through a ``ToolBot``, ``FuncNode`` runs one tool), its run state,
decisions, parallel calls and approvals, ``from_flow`` (any hand-made graph as a bot), agents as tools, and
``AgentBot`` (the reference graph). The reasoning patterns (``llamabot.reasoning``) are graph bots too.
"""
