"""zq.validation: every check accepts the edges and refuses past them."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from zq import validation
from zq.config import Limits
from zq.errors import InvalidRequest

LIMITS = Limits()


@pytest.mark.parametrize("name", ["q", "a.b-c_D9", "x" * 64])
def test_queue_name_accepts(name):
    assert validation.queue_name(name, LIMITS) == name


@pytest.mark.parametrize("name", ["", "x" * 65, "a b", "a/b", "é", "a:b"])
def test_queue_name_refuses(name):
    with pytest.raises(InvalidRequest, match="Queue name"):
        validation.queue_name(name, LIMITS)


def test_project_id_required_and_bounded():
    assert validation.project_id("p" * 256, LIMITS) == "p" * 256
    with pytest.raises(InvalidRequest, match="X-Project-ID"):
        validation.project_id(None, LIMITS)
    with pytest.raises(InvalidRequest, match="256"):
        validation.project_id("p" * 257, LIMITS)


def test_client_id_must_be_uuid():
    assert validation.client_id("3381AF92-2B9E-11E3-B191-71861300734C") == (
        "3381af92-2b9e-11e3-b191-71861300734c"
    )
    with pytest.raises(InvalidRequest, match="required"):
        validation.client_id(None)
    with pytest.raises(InvalidRequest, match="UUID"):
        validation.client_id("not-a-uuid")


@pytest.mark.parametrize("value", [True, 1.5, "60", None])
def test_integer_refuses_non_integers(value):
    with pytest.raises(InvalidRequest, match="must be an integer between 1 and 5"):
        validation.integer(value, "thing", 1, 5)


def test_ranges_name_field_and_bounds():
    assert validation.message_ttl(60, LIMITS) == 60
    assert validation.message_ttl(1209600, LIMITS) == 1209600
    with pytest.raises(InvalidRequest, match="Message ttl must be between 60 and 1209600"):
        validation.message_ttl(59, LIMITS)
    with pytest.raises(InvalidRequest, match="Message delay must be between 0 and 900"):
        validation.message_delay(901, LIMITS)
    with pytest.raises(InvalidRequest, match="Claim ttl must be between 60 and 43200"):
        validation.claim_ttl(43201, LIMITS)
    with pytest.raises(InvalidRequest, match="Claim grace must be between 60 and 43200"):
        validation.claim_grace(10, LIMITS)
    with pytest.raises(InvalidRequest, match="limit must be between 1 and 20"):
        validation.limit(0, 20)


def test_posted_messages_shapes():
    checked = validation.posted_messages(
        {"messages": [{"body": {"a": 1}}, {"body": None, "ttl": 120, "delay": 5}]}, LIMITS
    )
    assert checked == [
        validation.PostedMessage({"a": 1}, None, None),
        validation.PostedMessage(None, 120, 5),
    ]


@pytest.mark.parametrize(
    ("document", "fragment"),
    [
        ([{"body": 1}], '"messages" list'),
        ({"messages": {}}, "JSON array"),
        ({"messages": []}, "at least one"),
        ({"messages": [1]}, r"messages\[0\] must be a JSON object"),
        ({"messages": [{"ttl": 60}]}, r'messages\[0\] is missing its "body"'),
        ({"messages": [{"body": 1, "ttl": 30}]}, r"messages\[0\].ttl must be between"),
        ({"messages": [{"body": 1}, {"body": 1, "delay": -1}]}, r"messages\[1\].delay"),
    ],
)
def test_posted_messages_refuses(document, fragment):
    with pytest.raises(InvalidRequest, match=fragment):
        validation.posted_messages(document, LIMITS)


def test_claim_options_defaults_and_nulls():
    assert validation.claim_options(None, LIMITS) == (300, 60)
    assert validation.claim_options({"ttl": None, "grace": None}, LIMITS) == (300, 60)
    assert validation.claim_options({"ttl": 100, "grace": 200}, LIMITS) == (100, 200)
    with pytest.raises(InvalidRequest, match="JSON object"):
        validation.claim_options([], LIMITS)


def test_purge_document():
    assert validation.purge_document(None) == {"messages", "subscriptions"}
    assert validation.purge_document({"resource_types": ["messages"]}) == {"messages"}
    with pytest.raises(InvalidRequest, match="claims"):
        validation.purge_document({"resource_types": ["claims"]})
    with pytest.raises(InvalidRequest, match="list of strings"):
        validation.purge_document({"resource_types": "messages"})


def test_metadata_patch_parses_pointers():
    changes = validation.metadata_patch([
        {"op": "add", "path": "/metadata/a~1b~0c", "value": 1},
        {"op": "remove", "path": "/metadata/x"},
    ])
    assert changes == [
        validation.MetadataChange("add", "a/b~c", 1),
        validation.MetadataChange("remove", "x"),
    ]


@pytest.mark.parametrize(
    ("document", "fragment"),
    [
        ({"op": "add"}, "JSON array"),
        ([], "at least one"),
        (["x"], "Operation 0 must be a JSON object"),
        ([{"op": "move", "path": "/metadata/a"}], '"op" must be one of add, replace, remove'),
        ([{"op": "add", "path": "/metadata/a"}], 'requires a "value"'),
        ([{"op": "add", "path": "metadata/a", "value": 1}], "JSON pointer"),
        ([{"op": "add", "path": "/other/a", "value": 1}], "/metadata/KEY"),
        ([{"op": "add", "path": "/metadata/a/b", "value": 1}], "/metadata/KEY"),
        ([{"op": "add", "path": "/metadata/", "value": 1}], "non-empty KEY"),
        ([{"op": "add", "path": "/metadata/a~2", "value": 1}], "~0 or ~1"),
    ],
)
def test_metadata_patch_refuses(document, fragment):
    with pytest.raises(InvalidRequest, match=fragment):
        validation.metadata_patch(document)


def test_id_list_bounds():
    assert validation.id_list(["a", " b ", ""], LIMITS) == ["a", "b"]
    assert validation.id_list(["a,b", "c"], LIMITS) == ["a", "b", "c"]
    with pytest.raises(InvalidRequest, match="between 1 and 20"):
        validation.id_list([], LIMITS)
    with pytest.raises(InvalidRequest, match="claim_ids"):
        validation.id_list([str(i) for i in range(21)], LIMITS, "claim_ids")


def test_message_marker():
    assert validation.message_marker(None) is None
    assert validation.message_marker("") is None
    assert validation.message_marker("12") == 12
    assert validation.message_marker(str(validation.MAX_MARKER)) == validation.MAX_MARKER
    # A marker no page gave is past every position: an empty page, as in Zaqar.
    for unknown in ("-1", "x", "1.5", "²", "\x00", str(2**63), "1" * 5000):
        assert validation.message_marker(unknown) == validation.MAX_MARKER


@pytest.mark.parametrize("name", ["q\n", "\nq", "q\r\n", ".", ".."])
def test_names_are_matched_whole_and_never_a_path_segment(name):
    with pytest.raises(InvalidRequest, match="Queue name"):
        validation.queue_name(name, LIMITS)


@pytest.mark.parametrize("name", ["...", ".a", "a.", "a..b"])
def test_dots_inside_names_stay_allowed(name):
    assert validation.queue_name(name, LIMITS) == name


@pytest.mark.parametrize("value", ["0123456789abcdef0123456789abcdef", "5f1e" * 6, "a", "A-_"])
def test_id_shapes(value):
    assert validation.is_id_shaped(value)


@pytest.mark.parametrize("value", ["", "a\n", "\x00", "a b", "é", "a/b", "x" * 65])
def test_not_id_shapes(value):
    assert not validation.is_id_shaped(value)


@pytest.mark.parametrize("value", ["p\x00", "p\n", "\x7f"])
def test_project_ids_refuse_control_characters(value):
    with pytest.raises(InvalidRequest, match="control characters"):
        validation.project_id(value, LIMITS)


_PIECES = st.one_of(st.sampled_from([b"0", b"9", b"x", b",", b".", b"-", b"\xff", b"\x00"]),
                    st.integers(14, 22).map(lambda n: b"7" * n))


@given(st.lists(_PIECES, max_size=12).map(b"".join))
def test_a_long_digit_run_is_found_exactly_where_a_regular_expression_finds_one(raw):
    # The translate-and-search shortcut against the plain definition.
    oracle = re.search(rb"[0-9]{19,}", raw) is not None
    assert validation.has_long_digit_run(raw) is oracle
    assert validation.has_long_digit_run(b"a" + b"1" * 19 + b"b")
    assert not validation.has_long_digit_run(b"1" * 18 + b"." + b"1" * 18)
