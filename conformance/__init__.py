"""The shared conformance suite: each property asserted once, played in every style."""
