"""Observing runs: the lifecycle-hook interface, in-memory traces, usage totals and limits, run events. The
lowest layer above ``errors``: every other package may import it, it imports none of them but ``errors``."""
