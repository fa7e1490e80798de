"""One click type for a point in time (commands/_times.Time) behind every option that takes one: the same
values are accepted and refused, with the same words, by --now (retain, compact, describe, consumer-groups,
transactions), --from-time/--to-time (dump-log, export) and lookup-time's TIMESTAMP (which also takes
Kafka's special values). Before, compact --now=-5 ran (exit 0) while retain --now=-5 was refused."""
from __future__ import annotations

import importlib

import click
import pytest

from conftest import FIXTURES, run_cli
from kafkalog_cli.commands import COMMANDS
from kafkalog_cli.commands._times import Time

PART = str(FIXTURES / "logdir" / "orders-0")
LOGDIR = str(FIXTURES / "logdir")

#: (command line before the option, option, command line after it): one run per time option
TIME_OPTIONS = {
    ("retain", "--now"): (["retain", "--dry-run"], [PART]),
    ("compact", "--now"): (["compact", "--dry-run"], [PART]),
    ("describe", "--now"): (["describe"], [PART]),
    ("consumer-groups", "--now"): (["consumer-groups"], [LOGDIR]),
    ("transactions", "--now"): (["transactions"], [LOGDIR]),
    ("dump-log", "--from-time"): (["dump-log"], [PART]),
    ("dump-log", "--to-time"): (["dump-log"], [PART]),
    ("export", "--from-time"): (["export", "--dry-run"], [PART]),
    ("export", "--to-time"): (["export", "--dry-run"], [PART]),
}


def _time_params():
    for name, (module, _help) in COMMANDS.items():
        cmd = importlib.import_module(module).command
        for p in cmd.params:
            if isinstance(p, click.Option) and any("time" in o or o == "--now" for o in p.opts) and not p.is_flag:
                yield name, p


def test_every_time_option_is_the_one_time_type():
    """An option about a time (--now, --from-time, --to-time) that parses its value itself would grow its
    own rules again: each one is a Time, and the table below covers each."""
    found = set()
    for name, p in _time_params():
        if p.type.name in ("integer", "integer range"):     # durations: --max-transaction-timeout MINUTES
            continue
        assert isinstance(p.type, Time), (name, p.opts)
        found.add((name, next(o for o in p.opts if o.startswith("--"))))
    assert found == set(TIME_OPTIONS)


@pytest.mark.parametrize("command,option", sorted(TIME_OPTIONS))
@pytest.mark.parametrize("value,why", [("-5", "is not a time"), ("earliest", "not a time"),
                                       ("1969-12-31", "before 1970"), ("tomorrow", "neither epoch milliseconds"),
                                       ("99999999999999999999", "beyond the largest timestamp")])
def test_every_time_option_refuses_the_same_values(command, option, value, why):
    before, after = TIME_OPTIONS[(command, option)]
    r = run_cli(*before, f"{option}={value}", *after)
    assert r.code == 2 and why in " ".join(r.err.split()), (command, option, value, r.err)


@pytest.mark.parametrize("command,option", sorted(TIME_OPTIONS))
def test_every_time_option_takes_the_same_times(command, option):
    before, after = TIME_OPTIONS[(command, option)]
    for value in ("1700000030000", "2023-11-14T22:13:50Z", "2023-11-14T22:13:50", "2023-11-14T23:13:50+01:00"):
        r = run_cli(*before, f"{option}={value}", *after)
        assert r.code != 2, (command, option, value, r.err)


def test_lookup_time_takes_kafkas_special_values_and_no_other_negative():
    for value in ("-1", "-2", "-3", "latest", "earliest", "max-timestamp"):
        assert run_cli("lookup-time", PART, value).code == 0, value
    for value, why in (("-4", "earliest-local"), ("-5", "latest-tiered"), ("-6", "is not a timestamp"),
                       ("1969-12-31", "before 1970")):
        r = run_cli("lookup-time", PART, value)
        assert r.code == 2 and why in " ".join(r.err.split()), (value, r.err)


def test_an_iso_time_and_its_milliseconds_are_the_same_now():
    """compact parsed --now with its own code: the JSON summary says the time each run used."""
    import json
    got = set()
    for value in ("1700000030000", "2023-11-14T22:13:50Z"):
        r = run_cli("compact", "--dry-run", "--format", "json", f"--now={value}", PART)
        (summary,) = [o for o in map(json.loads, r.out.splitlines()) if o["type"] == "summary"]
        got.add(summary["now"])
    assert got == {1700000030000}


def test_an_iso_time_is_its_exact_millisecond():
    """An ISO time is converted exactly, down to the millisecond as Java's Instant.toEpochMilli (floor):
    through a float (timestamp() * 1000) 1,220 of 200,000 times of 2000-2100 written with microseconds, as
    Python's isoformat() and many logs print them, came out a millisecond early (main), so lookup-time and
    --from-time could return a record one millisecond before the time asked."""
    import random
    from datetime import datetime, timedelta, timezone

    from kafkalog_cli.engine.lookup import parse_timestamp
    epoch = datetime(1970, 1, 1, tzinfo=timezone.utc)
    rnd = random.Random(5)
    for _ in range(20000):
        ms = rnd.randrange(946684800000, 4102444800000)
        dt = epoch + timedelta(milliseconds=ms)
        for spec in ("microseconds", "milliseconds"):
            assert parse_timestamp(dt.isoformat(timespec=spec)) == ms, dt.isoformat(timespec=spec)
    assert parse_timestamp("2038-11-20T21:25:19.535000+00:00") == 2173901119535   # 2173901119534 on main
    assert parse_timestamp("2024-03-01T12:00:00.999999Z") == 1709294400999
    r = run_cli("lookup-time", PART, "1969-12-31T23:59:59.9995Z")                 # 0 on main (truncated)
    assert r.code == 2 and "before 1970" in " ".join(r.err.split()), r.err


@pytest.mark.parametrize("value", ["1969-12-31T23:59:59.999Z", "1969-12-31T23:59:59.998Z",
                                   "1969-12-31T23:59:59.997+00:00"])
def test_an_iso_time_just_before_1970_is_no_special_value(value):
    """-1, -2 and -3 ms are Kafka's latest, earliest and max-timestamp only when typed as numbers (or their
    names): lookup-time 1969-12-31T23:59:59.999Z answered with the log end (latest), exit 0, on main."""
    r = run_cli("lookup-time", PART, value)
    assert r.code == 2 and "before 1970" in " ".join(r.err.split()), (value, r.out, r.err)
