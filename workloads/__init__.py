"""The lab's workloads: programs run on every variant, one file per programming style.

Each workload is a CLI (``python -m workloads.<name> --loop NAME ...``) that gets its loop by
discovery (``loops.get``), never by import, and keeps everything that is not concurrency in a
loop-free common module so the style files differ only in style.
"""
