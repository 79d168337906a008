"""Where the label page's time went under load (bench/annotate_load.py): statements per save and
per "next item", and sessions handed connections out of arrival order. Counted on SQLite and a
real PostgreSQL server; the gate is exercised with real threads."""
from __future__ import annotations

import threading
import time

from sqlalchemy import event, select
from sqlmodel import Session

from annotate import service
from db import get_engine, session_scope
from db import models as m
from db.engine import FairGate


def _statements(engine):
    seen: list[str] = []

    def record(_conn, _cursor, statement, *_args):
        seen.append(statement.split()[0].upper())

    event.listen(engine, "before_cursor_execute", record)
    return seen, lambda: event.remove(engine, "before_cursor_execute", record)


def test_a_save_and_a_next_take_few_statements(app_any_db):
    engine = get_engine(app_any_db)
    with Session(engine) as session:
        anna = session.exec(select(m.Annotator.id).where(m.Annotator.username == "anna")
                            ).scalar_one()
        first, second = [e.generation_id for e in service.queue_for(session, anna)[:2]]
        service.save_label(session, generation_id=first, annotator_id=anna, accuracy="correct",
                           codes=["LG-GR1"], note="", seconds_spent=1, status="done",
                           expected_revision=None)
        session.commit()
    seen, stop = _statements(engine)
    try:
        with session_scope(app_any_db) as session:
            service.save_label(session, generation_id=first, annotator_id=anna,
                               accuracy="partial", codes=["LG-GR1"], note="", seconds_spent=2,
                               status="done", expected_revision=1)
        saves = list(seen)
        seen.clear()
        with session_scope(app_any_db) as session:
            view = service.load_item(session, second, anna)
        nexts = list(seen)
    finally:
        stop()
    assert view.generation_id == second
    # check + UPDATE..RETURNING + DELETE codes + INSERT codes + INSERT event (was 9 before)
    assert len(saves) <= 5, saves
    assert len(nexts) <= 2, nexts  # the item with its assignment, the own label (was 7)


def test_the_gate_admits_in_arrival_order_and_a_returning_holder_queues_behind():
    gate = FairGate(1)
    order: list[str] = []
    assert gate.enter()  # the holder

    def wait_turn(name):
        held = gate.enter()
        order.append(name)
        time.sleep(0.01)
        if held:
            gate.leave()

    waiters = []
    for k in range(5):
        thread = threading.Thread(target=wait_turn, args=(f"w{k}",))
        thread.start()
        deadline = time.time() + 5
        while len(gate._waiters) < k + 1 and time.time() < deadline:  # queued before the next
            time.sleep(0.001)
        waiters.append(thread)
    gate.leave()
    wait_turn("holder again")  # gave its slot back and asks at once: it waits its turn
    for thread in waiters:
        thread.join(5)
    assert order == ["w0", "w1", "w2", "w3", "w4", "holder again"]


def test_the_gate_lets_a_nested_session_through_and_a_long_wait_go_on_to_the_pool():
    gate = FairGate(1, timeout=0.2)
    assert gate.enter()
    assert gate.enter() is False  # the same thread again: no second slot, no deadlock
    outcome = []
    thread = threading.Thread(target=lambda: outcome.append(gate.enter()))
    started = time.time()
    thread.start()
    thread.join(5)
    assert outcome == [False] and time.time() - started < 3  # gave up its place after 0.2 s
    assert not gate._waiters
    gate.leave()
    assert gate.enter()  # the slot came back
