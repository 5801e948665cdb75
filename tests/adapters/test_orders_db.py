import sqlite3
import threading
from datetime import date

import pytest

from haygraph.adapters.errors import UnusableDatabaseError
from haygraph.adapters.examples.orders_db import (
    IdempotencyConflictError,
    OrderNotFoundError,
    OrdersDatabase,
    OrderStateError,
)


@pytest.fixture()
def db(tmp_path):
    return OrdersDatabase(tmp_path / "orders.db")


def _count(path, table):
    with sqlite3.connect(path) as conn:
        return conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]


class TestOrdersDatabase:
    def test_seed_is_idempotent(self, tmp_path):
        path = tmp_path / "orders.db"
        OrdersDatabase(path)
        db = OrdersDatabase(path)
        ids = db.order_ids()
        assert len(ids) == 10 and "202405120001" in ids and "202406030017" in ids
        assert all(len(i) == 12 and i.isdigit() for i in ids)
        assert _count(path, "orders") == 10
        assert _count(path, "tracking_events") == 50 + 4 + 2 + 3 + 3 + 4

    def test_get_order_has_items_events_and_total(self, db):
        order = db.get_order("202405120001")
        assert order["status"] == "in_transit" and order["carrier"] == "SF Express"
        assert len(order["tracking_events"]) == 50
        assert order["tracking_events"][0]["occurred_at"] < order["tracking_events"][-1]["occurred_at"]
        assert order["total_cents"] == 8900 + 2 * 2500
        assert db.get_order("999999999999") is None

    def test_holidays_seeded_and_extensible(self, db):
        assert date(2025, 10, 1) in db.holidays()
        db.add_holiday(date(2025, 6, 2), "Company day")
        assert date(2025, 6, 2) in db.holidays()

    def test_create_ticket_once_per_request_id(self, db, tmp_path):
        first = db.create_ticket(
            "req-1", category="delivery", description="Parcel is late", order_id="202405120001"
        )
        again = db.create_ticket(
            "req-1", category="delivery", description="Parcel is late", order_id="202405120001"
        )
        assert first["replayed"] is False and again["replayed"] is True
        assert again["ticket_id"] == first["ticket_id"]
        assert _count(tmp_path / "orders.db", "tickets") == 1
        other = db.create_ticket("req-2", category="other", description="Another problem")
        assert other["ticket_id"] != first["ticket_id"]
        assert _count(tmp_path / "orders.db", "tickets") == 2

    def test_reused_request_id_with_other_arguments_conflicts(self, db):
        db.create_ticket("req-1", category="delivery", description="Parcel is late")
        with pytest.raises(IdempotencyConflictError):
            db.create_ticket("req-1", category="refund", description="I want my money back")

    def test_update_address_once_and_only_before_shipping(self, db, tmp_path):
        result = db.update_shipping_address("r1", "202406030017", "1 New Street, Shanghai")
        assert result["new_address"] == "1 New Street, Shanghai"
        assert db.update_shipping_address("r1", "202406030017", "1 New Street, Shanghai")["replayed"] is True
        assert db.get_order("202406030017")["shipping_address"] == "1 New Street, Shanghai"
        assert _count(tmp_path / "orders.db", "address_changes") == 1
        with pytest.raises(OrderStateError, match="in_transit"):
            db.update_shipping_address("r2", "202405120001", "2 Other Road, Hong Kong")
        with pytest.raises(OrderNotFoundError):
            db.update_shipping_address("r3", "999999999999", "2 Other Road, Hong Kong")
        assert _count(tmp_path / "orders.db", "address_changes") == 1
        assert _count(tmp_path / "orders.db", "requests") == 1

    def test_concurrent_same_request_applies_effect_once(self, db, tmp_path):
        results, barrier = [], threading.Barrier(8)

        def worker():
            barrier.wait()
            results.append(db.create_ticket("same", category="refund", description="Refund please, broken"))

        threads = [threading.Thread(target=worker) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len({r["ticket_id"] for r in results}) == 1
        assert sum(not r["replayed"] for r in results) == 1
        assert _count(tmp_path / "orders.db", "tickets") == 1


class TestUnusableDatabaseFile:
    def test_garbage_file_names_the_file_and_the_fix(self, tmp_path):
        path = tmp_path / "orders.sqlite"
        path.write_bytes(b"this is not a database" * 100)
        with pytest.raises(UnusableDatabaseError) as info:
            OrdersDatabase(path)
        assert str(info.value) == (
            f"{path} cannot be used as the example orders database (file is not a database); it is created "
            "by --example-tools: move it away or delete it and a fresh demo database is made, or run without "
            "--example-tools"
        )
        assert path.read_bytes().startswith(b"this is not a database")  # nothing overwritten
        path.unlink()
        assert OrdersDatabase(path).order_ids()  # the fix works: a fresh demo database

    def test_garbage_file_is_one_cli_line(self, tmp_path, capsys):
        from haygraph.adapters.cli.main import main
        from haygraph.retrieval.config import RetrievalConfig
        from tests.retrieval.store_helpers import small_store

        store = small_store()
        store.meta["config"] = RetrievalConfig.from_dict({"query": {"mode": "bm25"}}).model_dump(mode="json")
        store.save(tmp_path / "kb")
        (tmp_path / "kb" / "orders.sqlite").write_bytes(b"garbage" * 100)
        argv = ["ask", "Where is my order 202405120001?", "--store", str(tmp_path / "kb"), "--example-tools"]
        assert main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith(
            f"error: {tmp_path / 'kb' / 'orders.sqlite'} cannot be used as the example orders"
        )
        assert "unexpected failure" not in err and len(err.splitlines()) == 1
