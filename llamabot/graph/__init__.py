"""The graph layer: strict PocketFlow flows, the dual sync/async node, the node kinds every pattern is built from
(``DecideNode`` picks tools, ``FuncNode`` runs one tool), the agent's run state and one mermaid renderer."""
