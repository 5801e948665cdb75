"""The PostgreSQL store backend (`store: {backend: postgres}`): table, connection, pipeline stages."""

from haygraph.retrieval.postgres.store import PostgresStore

__all__ = ["PostgresStore"]
