"""A guarded ASGI server: limits, one error shape and uvicorn hardened against slow or huge
requests (`guarded_asgi.app` for the application side, `guarded_asgi.server` for the
connection side)."""
