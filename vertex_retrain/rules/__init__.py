"""The rules both backends follow, written once.

Each module holds one rule, and both ``backends/local`` and ``backends/vertex`` call it, so
the two cannot drift apart:

- :mod:`.flags`: how a value is written on a training program's command line.
- :mod:`.numbers`: a whole-number double (how a spec and Vertex store numbers) is an integer.
- :mod:`.idempotency`: the request key that makes a re-run find what the first run made.
- :mod:`.aliases`: which aliases a registered version takes after the evaluation gate.
- :mod:`.same_model`: when a candidate is the champion itself (nothing to decide).
- :mod:`.retention`: ``keep_last_n`` and which deployed models are pruned.
- :mod:`.trials`: which trial of a tuning study wins.
- :mod:`.traffic`: traffic split arithmetic (proportional scaling, exact rounding).

Everything here is pure: no I/O, no client, no environment.
"""
