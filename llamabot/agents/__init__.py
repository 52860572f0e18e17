"""The agents layer: ``AgentBot`` (and its ``AsyncAgentBot`` name), graphs built from the graph layer's nodes."""
