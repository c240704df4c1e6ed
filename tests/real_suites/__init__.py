"""Other projects' own test suites, run unmodified on the lab's asyncio loops (see README.md)."""
