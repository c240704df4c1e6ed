"""The studies, a folder each: its declaration (the package), its running side and its
rendering side, and its README with its method. The registry (:mod:`bench.registry`) lists
them; nothing else in the core names one."""
