from __future__ import annotations

import pytest
from pydantic import ValidationError

from todos.schemas import TodoItem, TodoWriteIn


def error_locs(exc_info: pytest.ExceptionInfo[ValidationError]) -> list[tuple]:
    return [error["loc"] for error in exc_info.value.errors()]


def test_it_accepts_the_current_claude_code_item_shape():
    item = TodoItem.model_validate(
        {"content": "Run tests", "status": "in_progress", "activeForm": "Running tests"}
    )
    assert item.as_wire() == {
        "content": "Run tests",
        "status": "in_progress",
        "activeForm": "Running tests",
    }


def test_it_accepts_the_older_item_shape_with_id_and_priority():
    item = TodoItem.model_validate(
        {"id": "1", "content": "Run tests", "status": "pending", "priority": "high"}
    )
    assert item.as_wire() == {
        "content": "Run tests",
        "status": "pending",
        "id": "1",
        "priority": "high",
    }


def test_it_stores_a_numeric_legacy_id_as_text():
    item = TodoItem.model_validate({"id": 7, "content": "Run tests", "status": "completed"})
    assert item.as_wire()["id"] == "7"


def test_it_accepts_opencodes_cancelled_status():
    item = TodoItem.model_validate(
        {"content": "Drop the cache", "status": "cancelled", "priority": "low"}
    )
    assert item.as_wire() == {"content": "Drop the cache", "status": "cancelled", "priority": "low"}


def test_it_ignores_item_fields_added_by_newer_agents():
    item = TodoItem.model_validate({"content": "Run tests", "status": "pending", "color": "red"})
    assert item.as_wire() == {"content": "Run tests", "status": "pending"}


@pytest.mark.parametrize(
    ("item", "field"),
    [
        ({"content": "", "status": "pending"}, "content"),
        ({"content": "   ", "status": "pending"}, "content"),
        ({"content": 3, "status": "pending"}, "content"),
        ({"status": "pending"}, "content"),
        ({"content": "Run tests", "status": "done"}, "status"),
        ({"content": "Run tests"}, "status"),
        ({"content": "Run tests", "status": "pending", "activeForm": " "}, "activeForm"),
        ({"content": "Run tests", "status": "pending", "priority": "urgent"}, "priority"),
        ({"content": "Run tests", "status": "pending", "id": 1.5}, "id"),
    ],
)
def test_it_refuses_an_item_naming_the_bad_field(item, field):
    with pytest.raises(ValidationError) as exc_info:
        TodoWriteIn.model_validate({"todos": [item]})
    assert all(loc[:3] == ("todos", 0, field) for loc in error_locs(exc_info))


def test_it_says_what_is_wrong_with_blank_content():
    with pytest.raises(ValidationError) as exc_info:
        TodoItem.model_validate({"content": " ", "status": "pending"})
    assert "must not be empty" in exc_info.value.errors()[0]["msg"]


def test_it_refuses_unknown_top_level_keys():
    with pytest.raises(ValidationError) as exc_info:
        TodoWriteIn.model_validate({"todos": [], "merge": True})
    assert error_locs(exc_info) == [("merge",)]


def test_it_refuses_a_write_without_a_list():
    with pytest.raises(ValidationError) as exc_info:
        TodoWriteIn.model_validate({"todos": {"content": "Run tests", "status": "pending"}})
    assert error_locs(exc_info) == [("todos",)]


def test_an_empty_list_is_a_valid_write():
    assert TodoWriteIn.model_validate({"todos": []}).todos == []


def test_it_keeps_the_agents_order():
    write = TodoWriteIn.model_validate(
        {
            "todos": [
                {"content": "B", "status": "completed"},
                {"content": "A", "status": "pending"},
                {"content": "C", "status": "in_progress"},
            ]
        }
    )
    assert [item.content for item in write.todos] == ["B", "A", "C"]
