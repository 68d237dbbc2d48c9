"""The local registry's SQLite database: opening, transactions and clear errors.

Models and endpoints share one file, `<local root>/registry.db`. It runs in WAL mode, so
readers never wait for the writer; every write is one `BEGIN IMMEDIATE` transaction, so two
writers queue on the busy timeout instead of failing half-way through, and a crash loses
nothing that was committed (`synchronous=FULL`).
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from vertex_retrain.backends.local.model_registry.registry_file import FileKind, file_kind
from vertex_retrain.backends.local.model_registry.registry_schema import (
    SCHEMA_VERSION,
    migrate,
    schema_version,
)
from vertex_retrain.backends.local.storage import local_root

DEFAULT_BUSY_TIMEOUT_S = 10.0
DB_FILENAME = "registry.db"


class RegistryError(RuntimeError):
    """The registry database cannot be used (corrupt, locked, newer schema)."""


class RegistryCorruptError(RegistryError):
    """The registry file is not a readable SQLite database."""


class RegistryLockedError(RegistryError):
    """Another process held the write lock for longer than the busy timeout."""


class RegistryNotFoundError(LookupError):
    """A model, version, alias, endpoint or deployed model does not exist."""


class RegistryInputError(ValueError):
    """An argument was rejected before anything was written."""


def default_db_path() -> Path:
    """Return `<local root>/registry.db` (the root comes from `$VERTEX_LOCAL_ROOT`)."""
    return local_root() / DB_FILENAME


def utc_now() -> str:
    """Return the current time as an RFC 3339 UTC timestamp, as Vertex prints them."""
    return datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


class RegistryDatabase:
    """Opens connections to the registry database, migrating its schema on first use.

    One short-lived connection per operation keeps the object safe to share between threads
    and to pickle into other processes.
    """

    def __init__(
        self, path: str | os.PathLike[str] | None = None, *, busy_timeout_s: float | None = None
    ) -> None:
        """Prepares access to the database (nothing is opened yet).

        Args:
            path: Database file; defaults to `<local root>/registry.db`.
            busy_timeout_s: How long a writer waits for another process's write lock;
                defaults to `DEFAULT_BUSY_TIMEOUT_S`, read when the object is made.
        """
        if busy_timeout_s is None:
            busy_timeout_s = DEFAULT_BUSY_TIMEOUT_S
        if busy_timeout_s <= 0:
            raise RegistryInputError(
                f"busy_timeout_s must be positive, got {busy_timeout_s!r}; pass e.g. 10.0"
            )
        self.path = Path(path).expanduser().resolve() if path is not None else default_db_path()
        self.busy_timeout_s = float(busy_timeout_s)
        self._schema_ready = False

    def _corrupt(self, error: sqlite3.DatabaseError) -> RegistryCorruptError:
        try:
            ours = file_kind(self.path) is FileKind.REGISTRY
        except OSError:
            ours = False
        if ours:  # a registry we made, damaged: moving it aside loses nothing of anyone else's
            advice = (
                f"Move it aside (mv {self.path} {self.path}.bad) to start an empty registry, "
                "or restore it from a backup."
            )
        else:
            advice = (
                "It is no registry this library made (nothing was changed): check the path, or "
                "restore the registry from a backup."
            )
        return RegistryCorruptError(
            f"registry database at {self.path} is not a SQLite database (corrupt?): {error}. "
            + advice
        )

    def _locked(self, error: sqlite3.OperationalError) -> RegistryLockedError:
        return RegistryLockedError(
            f"registry database at {self.path} was locked by another process for more than "
            f"{self.busy_timeout_s:g} s ({error}). Wait for the other writer to finish, or "
            "stop a process stuck holding it (see `fuser` on the file)."
        )

    def _translate(self, error: sqlite3.Error) -> Exception:
        text = str(error).lower()
        if isinstance(error, sqlite3.OperationalError) and ("locked" in text or "busy" in text):
            return self._locked(error)
        if isinstance(error, sqlite3.DatabaseError) and (
            "not a database" in text or "malformed" in text or "encrypted" in text
        ):
            return self._corrupt(error)
        return error

    def _connect(self) -> sqlite3.Connection:
        if self.path.is_dir():
            raise RegistryInputError(
                f"registry database path {self.path} is a directory; pass a file path such as "
                f"{self.path / DB_FILENAME}"
            )
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # isolation_level=None: this module issues BEGIN/COMMIT itself.
        connection = sqlite3.connect(
            self.path, timeout=self.busy_timeout_s, isolation_level=None, check_same_thread=False
        )
        try:
            connection.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout_s * 1000)}")
            mode = connection.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                raise RegistryError(
                    f"registry database at {self.path} could not switch to WAL mode (got "
                    f"{mode!r}); it needs a local file system that supports shared memory"
                )
            connection.execute("PRAGMA synchronous = FULL")
            connection.execute("PRAGMA foreign_keys = ON")
            if not self._schema_ready:
                self._ensure_schema(connection)
        except BaseException:
            connection.close()
            raise
        return connection

    def _ensure_schema(self, connection: sqlite3.Connection) -> None:
        version = schema_version(connection)
        if version > SCHEMA_VERSION:
            raise RegistryError(
                f"registry database at {self.path} has schema version {version}, newer than "
                f"this library understands ({SCHEMA_VERSION}); upgrade vertex-retrain or use "
                "another VERTEX_LOCAL_ROOT"
            )
        if version < SCHEMA_VERSION:
            connection.execute("BEGIN IMMEDIATE")
            try:
                migrate(connection)  # re-reads the version under the lock
                connection.execute("COMMIT")
            except BaseException:
                connection.execute("ROLLBACK")
                raise
        self._schema_ready = True

    @contextmanager
    def connect(self) -> Iterator[sqlite3.Connection]:
        """Yields a connection for reads (each statement sees a committed snapshot).

        Raises:
            RegistryCorruptError: The file is not a SQLite database.
            RegistryLockedError: A migration waited too long for the write lock.
        """
        try:
            connection = self._connect()
        except sqlite3.Error as error:
            raise self._translate(error) from error
        try:
            yield connection
        except sqlite3.Error as error:
            raise self._translate(error) from error
        finally:
            connection.close()

    @contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        """Yields a connection inside a read transaction: one consistent snapshot."""
        with self.connect() as connection:
            connection.execute("BEGIN")
            try:
                yield connection
            finally:
                connection.execute("ROLLBACK")

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """Yields a connection inside `BEGIN IMMEDIATE`; commits on success, rolls back on error.

        Raises:
            RegistryLockedError: Another process held the write lock past the busy timeout.
        """
        with self.connect() as connection:
            try:
                connection.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as error:
                raise self._translate(error) from error
            try:
                yield connection
            except BaseException:
                connection.execute("ROLLBACK")
                raise
            connection.execute("COMMIT")
