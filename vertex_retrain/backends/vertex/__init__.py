"""Vertex AI backend: submits the shared payloads through GCPC launchers and Google clients."""
