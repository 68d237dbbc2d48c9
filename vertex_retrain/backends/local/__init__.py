"""The local backend: the same Vertex payloads run on this machine, stricter where they differ.

Rooms, one concern each: ``jobs`` (CustomJobs as processes), ``environments`` (wheels and the
isolated environments they run in), ``studies`` (tuning), ``model_registry`` (models, versions,
aliases, weeks on record), ``serving`` (endpoints, servers, router) and ``kfp_adapter`` (all use of
kfp.local's internals). ``backend.LocalBackend`` ties them to the ``Backend`` protocol;
``storage``, ``lifeline`` and ``reconcile`` serve every room.
"""
