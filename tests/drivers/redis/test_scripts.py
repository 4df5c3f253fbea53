"""The scripts: loaded by name, reloaded after SCRIPT FLUSH, time passed in."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from tests.drivers.redis.helpers import post, visible
from zq import events
from zq.clock import ManualClock
from zq.storage.redis import RedisStorage
from zq.storage.redis import scripts as scripts_module
from zq.storage.redis.scripts import script_names, script_source

STATE_CHANGES = {"post", "claim", "pop", "delete", "delete_many", "renew", "release",
                 "purge", "queue_create", "queue_set_metadata", "queue_delete", "gc",
                 "events_trim", "settle", "layout_upgrade", "move", "reject",
                 "sub_create", "sub_update", "sub_confirm", "sub_delete", "sub_gc",
                 "consumer_record", "consumer_settle", "consumer_forget",
                 "breaker_force", "breaker_redrive_done", "events_absorb"}


def test_every_state_change_has_its_own_script() -> None:
    assert set(script_names()) >= STATE_CHANGES


def test_every_script_compiles(storage: RedisStorage) -> None:
    for name in script_names():
        sha = storage.client.script_load(script_source(name))
        assert re.fullmatch(r"[0-9a-f]{40}", sha), name


def test_scripts_never_read_the_server_clock() -> None:
    for name in script_names():  # each source includes the shared library
        assert not re.search(r"['\"]TIME['\"]", script_source(name)), name


def _lua_files() -> dict[str, str]:
    """Each lua/ file as written (library included), without the generated names."""
    folder = Path(scripts_module.__file__).parent / "lua"
    return {path.name: path.read_text() for path in folder.glob("*.lua")}


def test_no_script_spells_an_event_kind_or_a_detail_key() -> None:
    """Kinds and detail keys come from zq.events (the KIND and DETAIL tables)."""
    kinds = "|".join(events.KIND_NAMES.values())
    keys = "|".join(str(v) for v in events.DETAIL_NAMES.values())
    for name, text in _lua_files().items():
        code = "\n".join(line.partition("--")[0] for line in text.splitlines())
        assert not re.search(rf"['\"]({kinds})['\"]", code), name
        # A detail table's field spelled in place: {ttl = ..., ['ttl'] = ...}.
        assert not re.search(rf"[{{,]\s*(\[['\"])?({keys})(['\"]\])?\s*=[^=]", code), name


def test_the_generated_names_are_zq_events(storage: RedisStorage) -> None:
    source = script_source("purge")
    for kind in events.KIND_NAMES.values():
        assert f'"{kind}"' in source
    assert source.index("local KIND") < source.index("local function event(")


def test_read_scripts_are_flagged_no_writes() -> None:
    for name in script_names():
        first = script_source(name).partition("\n")[0]
        assert (name in STATE_CHANGES) == ("no-writes" not in first), name


def test_operations_survive_script_flush(
    storage: RedisStorage, project: str, clock: ManualClock
) -> None:
    ids = post(storage, project, "q", 3)
    storage.client.script_flush()
    assert visible(storage, project, "q") == ids  # read script reloaded
    storage.client.script_flush()
    claim = storage.claims.create(project, "q", ttl=60, grace=60, limit=2,
                                  client_id=None)
    assert claim is not None
    assert [m.id for m in claim.messages] == ids[:2]
    storage.client.script_flush()
    delete_sha = hashlib.sha1(script_source("delete").encode()).hexdigest()
    assert storage.client.script_exists(delete_sha) == [False]
    storage.messages.delete(project, "q", ids[0], claim_id=claim.id, client_id=None)
    assert storage.client.script_exists(delete_sha) == [True]
    assert visible(storage, project, "q") == ids[1:]
