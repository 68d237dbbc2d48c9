"""Local endpoints: deploy, traffic split and rollback, each deployed model's server process
under Vertex's serving contract, the router that splits requests, and the guarded ASGI stack."""
