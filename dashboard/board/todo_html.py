"""A card's todo items as HTML, made in Python.

A busy board shows hundreds of items (34 cards of a dozen each on a team's busiest session),
and the template engine spent more on them than on the rest of the page: each item went
through a dozen template nodes and filters. Here each is one `format_html`, which escapes its texts;
the markup is what `dashboard/_agent_card.html` showed, and is read the same way.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString
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


# The markup of an item, in pieces chosen by its status and fields: constants all. Each item
# is then one `format_html`, which escapes every text of the agent's it fills in.
ITEM_OPEN = (
    '<li class="todo is-{status}" data-change-key="{status}|{content}">\n'
    '<span class="box" role="img" aria-label="{said}">{box}</span>\n'
)
TEXT = '<span class="text">{text}</span>'
# An item in progress: what runs, a spinner, and its task below when it says what runs.
RUNNING = (
    '<span class="text"><strong>{running}</strong> '
    '<span class="spinner" aria-hidden="true">▶</span>'
)
SUBTEXT = '<span class="subtext">{text}</span>'
PRIORITY = '\n<span class="priority priority-{priority}">{priority}</span>'
ITEM_CLOSE = "\n</li>"


def _item(todo: Todo) -> SafeString:
    box, said = BOXES.get(todo.status, PENDING_BOX)
    running = todo.status == "in_progress"
    text = RUNNING + (SUBTEXT if todo.active_form else "") + "</span>" if running else TEXT
    markup = ITEM_OPEN + text + (PRIORITY if todo.priority else "") + ITEM_CLOSE
    return format_html(
        markup,
        status=todo.status,
        content=todo.content,
        said=said,
        box=box,
        text=cut(todo.content),
        running=cut(todo.running_text) if running else "",
        priority=todo.priority,
    )


def todo_items(todos: Iterable[Todo]) -> SafeString:
    """The `<li>` of each item, in order."""
    return format_html_join("\n", "{}", ((_item(todo),) for todo in todos))
