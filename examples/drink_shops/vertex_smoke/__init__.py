"""``make smoke-vertex``: the drink shops' experiment, once, for real on Vertex AI, then deleted.

A rehearsal of the example on Google Cloud, written with the library's public pieces (its
Vertex clients, the compiled template, preflight). Opt-in, never run by the tests or CI: it
needs a project, credentials, a bucket and money. ``python -m vertex_smoke`` from
``examples/drink_shops`` (the Makefile's ``smoke-vertex`` target does it).
"""
