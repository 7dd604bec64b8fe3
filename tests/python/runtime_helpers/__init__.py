"""Helper modules for tests/python/test_runtime.py (Functions the runtime resolves by name)."""
