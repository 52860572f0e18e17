"""Observing runs: the lifecycle-hook interface, in-memory traces and run events. The lowest layer with
``errors``: every other package may import it, it imports none of them."""
