"""The control loop's inbox: inputs from any thread, run by the tick in order, at its time."""

import threading

from hypothesis import given, settings, strategies as st
from ik_control.control.inbox import Inbox, KEPT_PER_KEY
import pytest


def _recorder():
    ran = []
    return ran, lambda tag: (lambda now: ran.append((tag, now)))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.none(), st.sampled_from('abc')), max_size=30))
def test_entries_run_once_in_order_and_a_key_keeps_only_its_newest(keys):
    """Unkeyed entries all run; a keyed one replaces its waiting namesake and moves last."""
    inbox = Inbox()
    ran, entry = _recorder()
    expected = []
    for n, key in enumerate(keys):
        inbox.post(entry(n), key)
        if key is not None:
            expected = [(k, m) for k, m in expected if k != key]
        expected.append((key, n))
    assert len(inbox) == len(expected)
    assert inbox.drain(2.5, on_error=pytest.fail) == len(expected)
    assert ran == [(n, 2.5) for _, n in expected]  # every one at the tick's own time
    assert len(inbox) == 0 and inbox.drain(3.0, on_error=pytest.fail) == 0


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from('ab'), st.booleans()), max_size=12))
def test_under_a_key_the_newest_valid_entry_wins_as_if_each_had_run(posts):
    """
    A valid target followed by a malformed one within a tick is not lost.

    Run one by one, a key's last valid entry would set the goal, and the malformed ones
    after it would be refused; the drain gives the same, among the last KEPT_PER_KEY.
    """
    inbox = Inbox()
    ran, errors = [], []

    def entry(key, n, valid):
        def run(now):
            if not valid:
                raise ValueError((key, n))
            ran.append((key, n))
        return run
    for n, (key, valid) in enumerate(posts):
        inbox.post(entry(key, n, valid), key)
    inbox.drain(1.0, on_error=lambda exc, now: errors.append(exc.args[0]))
    for key in 'ab':
        kept = [(n, valid) for n, (k, valid) in enumerate(posts) if k == key][-KEPT_PER_KEY:]
        good = [n for n, valid in kept if valid]
        applied = [(key, good[-1])] if good else []
        assert [r for r in ran if r[0] == key] == applied
        after = [n for n, valid in kept if not valid and (not good or n > good[-1])]
        assert sorted(n for k, n in errors if k == key) == after


def test_a_failing_entry_is_reported_and_the_others_still_run():
    inbox = Inbox()
    ran, entry = _recorder()
    errors = []

    def bad(now):
        raise ValueError('not this one')
    inbox.post(entry('first'))
    inbox.post(bad)
    inbox.post(entry('last'))
    inbox.drain(1.0, on_error=lambda exc, now: errors.append((str(exc), now)))
    assert ran == [('first', 1.0), ('last', 1.0)]
    assert errors == [('not this one', 1.0)]


def test_an_entry_posted_while_draining_waits_for_the_next_tick():
    inbox = Inbox()
    ran, entry = _recorder()
    inbox.post(lambda now: inbox.post(entry('later')))
    assert inbox.drain(1.0, on_error=pytest.fail) == 1
    assert ran == []
    inbox.drain(2.0, on_error=pytest.fail)
    assert ran == [('later', 2.0)]


def test_clear_drops_what_waits():
    inbox = Inbox()
    ran, entry = _recorder()
    inbox.post(entry('gone'))
    inbox.clear()
    assert inbox.drain(1.0, on_error=pytest.fail) == 0 and ran == []


def test_posts_from_many_threads_during_drains_each_run_exactly_once():
    """Four posting threads against a draining one: nothing lost, nothing run twice."""
    inbox = Inbox()
    ran, errors = [], []
    per_thread = 2000
    done = threading.Event()

    def poster(t):
        for n in range(per_thread):
            inbox.post(lambda now, tag=(t, n): ran.append(tag))

    def drainer():
        while not done.is_set():
            inbox.drain(0.0, on_error=lambda exc, now: errors.append(exc))

    drain = threading.Thread(target=drainer)
    drain.start()
    posters = [threading.Thread(target=poster, args=(t,)) for t in range(4)]
    for p in posters:
        p.start()
    for p in posters:
        p.join()
    done.set()
    drain.join()
    inbox.drain(0.0, on_error=pytest.fail)
    assert errors == []
    assert sorted(ran) == [(t, n) for t in range(4) for n in range(per_thread)]
    for t in range(4):  # one thread's posts run in the order it made them
        assert [n for s, n in ran if s == t] == list(range(per_thread))
