"""Local CustomJobs: the payload read, each pool's replicas as processes with Vertex's cluster
environment and `/gcs` mount, Spot rehearsal, exit advice and the ``gcp_resources`` output."""
