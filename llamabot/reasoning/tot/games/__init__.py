"""Games for the Tree-of-Thoughts search: checkers, step bookkeeping and prompts. Pure."""
