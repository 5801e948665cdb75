"""`OrdersDatabase`: a real SQLite orders system behind the example tools.

Creates its schema and seeds sample data idempotently (ten orders with 12-digit ids, items,
carriers, tracking events — order 202405120001 has 50 of them — addresses, and a holiday
calendar). Writes are idempotent: each write carries a request id that is stored, under a UNIQUE
constraint, in the same transaction as the effect row itself, so a retried or replayed call returns
the first result and never repeats the effect.

Thread-safe: every operation opens its own connection (the tool executor calls tools from worker
threads); writes take SQLite's write lock up front with ``BEGIN IMMEDIATE``.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from haygraph.adapters.errors import UnusableDatabaseError

TICKET_CATEGORIES = ("delivery", "damaged_item", "refund", "address_change", "other")
ADDRESS_CHANGEABLE_STATUSES = ("pending", "processing")

_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS orders (
    order_id TEXT PRIMARY KEY CHECK (length(order_id) = 12 AND order_id NOT GLOB '*[^0-9]*'),
    customer_name TEXT NOT NULL,
    customer_email TEXT NOT NULL,
    status TEXT NOT NULL,
    carrier TEXT,
    tracking_number TEXT,
    placed_at TEXT NOT NULL,
    shipping_address TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS order_items (
    order_id TEXT NOT NULL REFERENCES orders(order_id),
    line INTEGER NOT NULL,
    sku TEXT NOT NULL,
    name TEXT NOT NULL,
    quantity INTEGER NOT NULL CHECK (quantity > 0),
    unit_price_cents INTEGER NOT NULL,
    PRIMARY KEY (order_id, line)
);
CREATE TABLE IF NOT EXISTS tracking_events (
    order_id TEXT NOT NULL REFERENCES orders(order_id),
    seq INTEGER NOT NULL,
    occurred_at TEXT NOT NULL,
    location TEXT NOT NULL,
    description TEXT NOT NULL,
    PRIMARY KEY (order_id, seq)
);
CREATE TABLE IF NOT EXISTS holidays (day TEXT PRIMARY KEY, name TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS requests (
    request_id TEXT PRIMARY KEY,
    operation TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    result_json TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS tickets (
    ticket_id INTEGER PRIMARY KEY AUTOINCREMENT,
    request_id TEXT NOT NULL UNIQUE,
    order_id TEXT REFERENCES orders(order_id),
    category TEXT NOT NULL CHECK (category IN ({", ".join(repr(c) for c in TICKET_CATEGORIES)})),
    description TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'open',
    created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS address_changes (
    change_id INTEGER PRIMARY KEY AUTOINCREMENT,
    request_id TEXT NOT NULL UNIQUE,
    order_id TEXT NOT NULL REFERENCES orders(order_id),
    old_address TEXT NOT NULL,
    new_address TEXT NOT NULL,
    changed_at TEXT NOT NULL
);
"""


class OrdersDatabaseError(Exception):
    """Base class of the orders database errors."""


class OrderNotFoundError(OrdersDatabaseError):
    """No order has the given id."""


class OrderStateError(OrdersDatabaseError):
    """The order's state does not allow the requested change (e.g. it has already shipped)."""


class IdempotencyConflictError(OrdersDatabaseError):
    """A request id was reused for a different operation or different arguments."""


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class OrdersDatabase:
    """A SQLite orders database at `path` (created and seeded on first use, idempotently)."""

    def __init__(self, path: str | Path, *, seed: bool = True) -> None:
        self.path = Path(path)
        self._init_lock = threading.Lock()
        with self._init_lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            try:
                with self._connect() as conn:
                    conn.execute("PRAGMA journal_mode=WAL")
                    conn.executescript(_SCHEMA)
                    if seed:
                        self._seed(conn, _seed_rows())
            except sqlite3.OperationalError as exc:  # locked by another process, read-only, no permission
                raise UnusableDatabaseError(
                    f"{self.path}: the example orders database of --example-tools cannot be opened ({exc}); "
                    "check its permissions and that no other process holds it"
                ) from exc
            except sqlite3.DatabaseError as exc:  # not a database ("file is not a database"), or corrupt
                raise UnusableDatabaseError(
                    f"{self.path} cannot be used as the example orders database ({exc}); it is created by "
                    "--example-tools: move it away or delete it and a fresh demo database is made, or run "
                    "without --example-tools"
                ) from exc

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        conn = sqlite3.connect(self.path, timeout=10.0, isolation_level=None)
        conn.row_factory = sqlite3.Row
        conn.execute("PRAGMA foreign_keys=ON")
        try:
            yield conn
        finally:
            conn.close()

    @staticmethod
    def _seed(conn: sqlite3.Connection, rows: dict[str, list[tuple[Any, ...]]]) -> None:
        conn.execute("BEGIN IMMEDIATE")
        try:
            for table, values in rows.items():
                if values:
                    marks = ", ".join("?" * len(values[0]))
                    conn.executemany(f"INSERT OR IGNORE INTO {table} VALUES ({marks})", values)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    # ----------------------------------------------------------------- reads

    def order_ids(self) -> list[str]:
        """Return every order id, sorted."""
        with self._connect() as conn:
            return [r[0] for r in conn.execute("SELECT order_id FROM orders ORDER BY order_id")]

    def get_order(self, order_id: str) -> dict[str, Any] | None:
        """Return the order with its items and tracking events (oldest first), or None."""
        with self._connect() as conn:
            row = conn.execute("SELECT * FROM orders WHERE order_id = ?", (order_id,)).fetchone()
            if row is None:
                return None
            items = conn.execute(
                "SELECT sku, name, quantity, unit_price_cents FROM order_items WHERE order_id = ? "
                "ORDER BY line",
                (order_id,),
            ).fetchall()
            events = conn.execute(
                "SELECT occurred_at, location, description FROM tracking_events WHERE order_id = ? "
                "ORDER BY seq",
                (order_id,),
            ).fetchall()
        order = dict(row)
        order["items"] = [dict(i) for i in items]
        order["total_cents"] = sum(i["quantity"] * i["unit_price_cents"] for i in items)
        order["tracking_events"] = [dict(e) for e in events]
        return order

    def holidays(self) -> list[date]:
        """Return the holiday calendar, sorted."""
        with self._connect() as conn:
            return [date.fromisoformat(r[0]) for r in conn.execute("SELECT day FROM holidays ORDER BY day")]

    def add_holiday(self, day: date, name: str) -> None:
        """Add (or rename) a holiday."""
        with self._connect() as conn:
            conn.execute("INSERT OR REPLACE INTO holidays VALUES (?, ?)", (day.isoformat(), name))

    def tickets(self) -> list[dict[str, Any]]:
        """Return every ticket row, oldest first."""
        with self._connect() as conn:
            return [dict(r) for r in conn.execute("SELECT * FROM tickets ORDER BY ticket_id")]

    def address_changes(self) -> list[dict[str, Any]]:
        """Return every address change row, oldest first."""
        with self._connect() as conn:
            return [dict(r) for r in conn.execute("SELECT * FROM address_changes ORDER BY change_id")]

    # ---------------------------------------------------------------- writes

    def _idempotent(
        self,
        request_id: str,
        operation: str,
        params: dict[str, Any],
        effect: Callable[[sqlite3.Connection], dict[str, Any]],
    ) -> dict[str, Any]:
        """Apply `effect` once per request id, in one transaction with the request record."""
        if not request_id or not request_id.strip():
            raise OrdersDatabaseError("request_id must be a non-empty string")
        fingerprint = hashlib.sha256(json.dumps(params, sort_keys=True).encode()).hexdigest()
        with self._connect() as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                previous = self._stored(conn, request_id, operation, fingerprint)
                if previous is not None:
                    conn.execute("ROLLBACK")
                    return previous
                result = effect(conn)
                conn.execute(
                    "INSERT INTO requests VALUES (?, ?, ?, ?, ?)",
                    (request_id, operation, fingerprint, json.dumps(result), _now()),
                )
                conn.execute("COMMIT")
            except sqlite3.IntegrityError:
                conn.execute("ROLLBACK")
                previous = self._stored(conn, request_id, operation, fingerprint)
                if previous is None:
                    raise
                return previous
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        return {**result, "replayed": False}

    @staticmethod
    def _stored(
        conn: sqlite3.Connection, request_id: str, operation: str, fingerprint: str
    ) -> dict[str, Any] | None:
        row = conn.execute(
            "SELECT operation, fingerprint, result_json FROM requests WHERE request_id = ?", (request_id,)
        ).fetchone()
        if row is None:
            return None
        if row["operation"] != operation or row["fingerprint"] != fingerprint:
            raise IdempotencyConflictError(
                f"request id {request_id!r} was already used for a different {row['operation']} call"
            )
        return {**json.loads(row["result_json"]), "replayed": True}

    def create_ticket(
        self, request_id: str, *, category: str, description: str, order_id: str | None = None
    ) -> dict[str, Any]:
        """Open a support ticket once per `request_id`; a repeated request returns the first ticket."""
        if category not in TICKET_CATEGORIES:
            raise OrdersDatabaseError(f"category must be one of {TICKET_CATEGORIES}, but got {category!r}")
        if not description.strip():
            raise OrdersDatabaseError("description must not be empty")
        params = {"category": category, "description": description, "order_id": order_id}

        def effect(conn: sqlite3.Connection) -> dict[str, Any]:
            if order_id is not None and not self._exists(conn, order_id):
                raise OrderNotFoundError(f"order {order_id} not found")
            created = _now()
            cur = conn.execute(
                "INSERT INTO tickets (request_id, order_id, category, description, status, created_at) "
                "VALUES (?, ?, ?, ?, 'open', ?)",
                (request_id, order_id, category, description, created),
            )
            return {
                "ticket_id": f"TCK-{cur.lastrowid:06d}",
                "order_id": order_id,
                "category": category,
                "status": "open",
                "created_at": created,
            }

        return self._idempotent(request_id, "create_ticket", params, effect)

    def update_shipping_address(self, request_id: str, order_id: str, address: str) -> dict[str, Any]:
        """Change an unshipped order's address once per `request_id`; a repeat returns the first result."""
        address = " ".join(address.split())
        if not address:
            raise OrdersDatabaseError("address must not be empty")

        def effect(conn: sqlite3.Connection) -> dict[str, Any]:
            row = conn.execute(
                "SELECT status, shipping_address FROM orders WHERE order_id = ?", (order_id,)
            ).fetchone()
            if row is None:
                raise OrderNotFoundError(f"order {order_id} not found")
            if row["status"] not in ADDRESS_CHANGEABLE_STATUSES:
                raise OrderStateError(
                    f"order {order_id} is {row['status']}: the shipping address can only change while "
                    f"the order is {' or '.join(ADDRESS_CHANGEABLE_STATUSES)}"
                )
            changed = _now()
            cur = conn.execute(
                "INSERT INTO address_changes (request_id, order_id, old_address, new_address, changed_at) "
                "VALUES (?, ?, ?, ?, ?)",
                (request_id, order_id, row["shipping_address"], address, changed),
            )
            conn.execute("UPDATE orders SET shipping_address = ? WHERE order_id = ?", (address, order_id))
            return {
                "change_id": cur.lastrowid,
                "order_id": order_id,
                "old_address": row["shipping_address"],
                "new_address": address,
                "changed_at": changed,
            }

        return self._idempotent(
            request_id, "update_shipping_address", {"order_id": order_id, "address": address}, effect
        )

    @staticmethod
    def _exists(conn: sqlite3.Connection, order_id: str) -> bool:
        return conn.execute("SELECT 1 FROM orders WHERE order_id = ?", (order_id,)).fetchone() is not None


# fmt: off
# order_id, customer, email, status, carrier, tracking number, placed at, address
_ORDERS = [
    ("202405120001", "Alice Chen", "alice@example.com", "in_transit", "SF Express", "SF1234567890",
     "2024-05-12T09:14:00", "88 Harbour Road, Wan Chai, Hong Kong"),
    ("202405150008", "Bob Martin", "bob@example.com", "delivered", "UPS", "1Z999AA10123456784",
     "2024-05-15T14:02:00", "12 Elm Street, Springfield, IL 62701, USA"),
    ("202406030017", "陈伟", "chen.wei@example.com", "processing", None, None,
     "2024-06-03T08:30:00", "上海市浦东新区世纪大道100号"),
    ("202406110042", "Dana Lee", "dana@example.com", "pending", None, None,
     "2024-06-11T19:45:00", "5 Rue de Rivoli, 75001 Paris, France"),
    ("202406200005", "Erik Jensen", "erik@example.com", "shipped", "DHL", "JD014600003828",
     "2024-06-20T11:00:00", "Nørrebrogade 20, 2200 København N, Denmark"),
    ("202407010033", "Fatima Khan", "fatima@example.com", "cancelled", None, None,
     "2024-07-01T16:20:00", "221 King Street, Toronto, ON M5H 1K5, Canada"),
    ("202407080021", "李娜", "li.na@example.com", "delivered", "SF Express", "SF2233445566",
     "2024-07-08T10:05:00", "北京市海淀区中关村大街27号"),
    ("202407150002", "George Brown", "george@example.com", "in_transit", "FedEx", "794644790132",
     "2024-07-15T13:30:00", "742 Evergreen Terrace, Portland, OR 97201, USA"),
    ("202408020019", "Hana Sato", "hana@example.com", "processing", None, None,
     "2024-08-02T07:50:00", "1-1 Chiyoda, Chiyoda-ku, Tokyo 100-0001, Japan"),
    ("202408190011", "Ivan Petrov", "ivan@example.com", "delivered", "DHL", "JD014600009911",
     "2024-08-19T18:10:00", "Tverskaya 7, Moscow 125009, Russia"),
]

# order_id, line, sku, name, quantity, unit price (cents)
_ITEMS = [
    ('202405120001', 1, 'KB-204', 'Mechanical keyboard', 1, 8900),
    ('202405120001', 2, 'MS-110', 'Wireless mouse', 2, 2500),
    ('202405150008', 1, 'HD-500', 'Noise-cancelling headphones', 1, 19900),
    ('202406030017', 1, 'MN-270', '27-inch monitor', 1, 24900),
    ('202406030017', 2, 'CB-001', 'USB-C cable', 3, 900),
    ('202406110042', 1, 'DK-300', 'Standing desk', 1, 45000),
    ('202406200005', 1, 'CH-900', 'Office chair', 1, 32000),
    ('202407010033', 1, 'LP-140', '14-inch laptop', 1, 109900),
    ('202407080021', 1, 'WC-720', 'Webcam 720p', 1, 4900),
    ('202407150002', 1, 'SP-020', 'Bluetooth speaker', 2, 5900),
    ('202408020019', 1, 'TB-010', 'Drawing tablet', 1, 15900),
    ('202408190011', 1, 'RT-600', 'Wi-Fi router', 1, 12900),
]

_HOLIDAYS = [
    ('2024-01-01', "New Year's Day"),
    ('2024-05-01', 'Labour Day'),
    ('2024-10-01', 'National Day'),
    ('2024-12-25', 'Christmas Day'),
    ('2025-01-01', "New Year's Day"),
    ('2025-05-01', 'Labour Day'),
    ('2025-10-01', 'National Day'),
    ('2025-12-25', 'Christmas Day'),
    ('2026-01-01', "New Year's Day"),
    ('2026-05-01', 'Labour Day'),
    ('2026-10-01', 'National Day'),
    ('2026-12-25', 'Christmas Day'),
]
# fmt: on


def _seed_rows() -> dict[str, list[tuple[Any, ...]]]:
    """Return the sample rows per table; order 202405120001 gets 50 tracking events."""
    hubs = [
        "Shenzhen hub",
        "Guangzhou sorting centre",
        "Hong Kong gateway",
        "Kowloon depot",
        "Wan Chai station",
    ]
    start = datetime(2024, 5, 12, 18, 0)
    events: list[tuple[Any, ...]] = [
        (
            "202405120001",
            i + 1,
            (start + timedelta(hours=3 * i)).isoformat(timespec="minutes"),
            hubs[i * len(hubs) // 50],
            f"Scan {i + 1}: parcel processed at {hubs[i * len(hubs) // 50]}",
        )
        for i in range(50)
    ]
    short = {
        "202405150008": ["Picked up", "In transit", "Out for delivery", "Delivered"],
        "202406200005": ["Picked up", "Departed origin facility"],
        "202407080021": ["Picked up", "In transit", "Delivered"],
        "202407150002": ["Picked up", "In transit", "Arrived at destination facility"],
        "202408190011": ["Picked up", "In transit", "Out for delivery", "Delivered"],
    }
    for order_id, placed, *_ in ((o[0], o[6]) for o in _ORDERS if o[0] in short):
        base = datetime.fromisoformat(placed) + timedelta(days=1)
        for seq, text in enumerate(short[order_id], start=1):
            when = (base + timedelta(days=seq - 1)).isoformat(timespec="minutes")
            events.append((order_id, seq, when, "carrier network", text))
    return {
        "orders": list(_ORDERS),
        "order_items": list(_ITEMS),
        "tracking_events": events,
        "holidays": list(_HOLIDAYS),
    }
