"""The local registry database: models, versions and aliases, its schema and migrations, the
tables the CLI prints, and the weeks on record (one row per local pipeline run)."""
