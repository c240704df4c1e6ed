"""What this machine is and which Pythons it has: facts every room of the lab reads.

The interpreters the lab supports and where each is found (:mod:`machine.interpreters`),
Debian's root for the versions the host lacks (:mod:`machine.debian_root`), the record a
measurement carries of where it ran (:mod:`machine.environment`) and what ``/proc`` says of a
process (:mod:`machine.proc`). Standard library only, so the noxfile imports it before any
virtual environment exists; it imports nothing of the lab, and the suite, the bench, the
timelines and the HTML report all stand on it.
"""
