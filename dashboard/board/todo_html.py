"""A card's todo items as HTML, made in Python.

A busy board shows hundreds of items (34 cards of a dozen each on a team's busiest session),
and the template engine spent more on them than on the rest of the page: each item went
through a dozen template nodes and filters. Here each is one string, its every text escaped;
the markup is what `dashboard/_agent_card.html` showed, and is read the same way.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from django.utils.text import Truncator

from todos.models import Todo

# A text is cut at this many characters: a card stays small however long an item is.
ITEM_CHARS = 200

# What the box shows for each status, and what a screen reader says of it.
BOXES = {
    "completed": ("☒", "completed"),
    "in_progress": ("☐", "in progress"),
    "cancelled": ("⊘", "cancelled"),
}
PENDING_BOX = ("☐", "pending")


def cut(text: str) -> str:
    """`text` as the `truncatechars` filter leaves it: Django's Truncator, but for the
    commonest case, short ASCII, which it would return as it is."""
    if len(text) <= ITEM_CHARS and text.isascii():
        return text
    return Truncator(text).chars(ITEM_CHARS)


def _text(todo: Todo) -> str:
    if todo.status != "in_progress":
        return f'<span class="text">{escape(cut(todo.content))}</span>'
    subtext = (
        f'<span class="subtext">{escape(cut(todo.content))}</span>' if todo.active_form else ""
    )
    return (
        f'<span class="text"><strong>{escape(cut(todo.running_text))}</strong> '
        f'<span class="spinner" aria-hidden="true">▶</span>{subtext}</span>'
    )


def _item(todo: Todo) -> str:
    status = escape(todo.status)
    box, said = BOXES.get(todo.status, PENDING_BOX)
    priority = escape(todo.priority)
    flag = f'\n<span class="priority priority-{priority}">{priority}</span>' if priority else ""
    return (
        f'<li class="todo is-{status}" data-change-key="{status}|{escape(todo.content)}">\n'
        f'<span class="box" role="img" aria-label="{said}">{box}</span>\n{_text(todo)}{flag}\n'
        "</li>"
    )


def todo_items(todos: Iterable[Todo]) -> SafeString:
    """The `<li>` of each item, in order."""
    # Every text from the agent above went through `escape`.
    return mark_safe("\n".join(_item(todo) for todo in todos))  # noqa: S308
