"""Build logic both backends share: context digest, Dockerfile lint, wheels.

- :mod:`.context`: the files a container build sends (``.dockerignore``) and their digest.
- :mod:`.archive`: safe extraction of a context archive (links and names checked first).
- :mod:`.dockerfile_lint`: the Dockerfile parse and lint every container build runs first.
- :mod:`.wheel`: a reproducible wheel of a Python project or bare package folder.

Nothing here talks to a registry or a cloud: the local builder and the Vertex backend's
Cloud Build / Cloud Storage path both call these functions and then publish in their own way.
"""
