"""Plan markdown to HTML. Plans come from agents, so they are untrusted text: raw HTML is off in
the parser (it comes out as visible text), and the output is sanitized again with nh3."""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from functools import lru_cache
from html import unescape

import nh3
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe
from markdown_it import MarkdownIt
from markdown_it.rules_core import StateCore
from markdown_it.token import Token
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import get_lexer_by_name
from pygments.util import ClassNotFound

TASK_PATTERN = re.compile(r"^\[([ xX])\]\s+")
ALIGN_PATTERN = re.compile(r"^text-align:(left|center|right)$")

ALLOWED_TAGS = set(
    "h1 h2 h3 h4 h5 h6 p br hr blockquote pre code span em strong s del a ul ol li input label div "
    "table thead tbody tr th td".split()
)
ALLOWED_ATTRIBUTES = {
    "a": {"href", "title"},
    "code": {"class"},
    "span": {"class"},
    "div": {"class"},
    "li": {"class"},
    "ul": {"class"},
    "ol": {"start"},
    "input": {"type", "checked", "disabled"},
    "th": {"class"},
    "td": {"class"},
}


# Pygments costs about 10 µs a character in its slowest lexers (SQL, Rust): a plan's first
# 20,000 characters of code get colours, the blocks after them are shown plain.
HIGHLIGHT_CHARS = 20_000
_highlight_left: ContextVar[int] = ContextVar("highlight_left", default=HIGHLIGHT_CHARS)


def _highlight(code: str, language: str, attrs: object) -> str:
    """Pygments spans for a fenced block with a known language; "" keeps the plain block."""
    left = _highlight_left.get()
    if not language or len(code) > left:
        return ""
    _highlight_left.set(left - len(code))
    try:
        lexer = get_lexer_by_name(language)
    except ClassNotFound:
        return ""
    return highlight(code, lexer, HtmlFormatter(nowrap=True))


def _task_lists(state: StateCore) -> None:
    """`- [ ] step` / `- [x] step` become disabled checkboxes, as GitHub shows them."""
    tokens = state.tokens
    for index in range(2, len(tokens)):
        inline = tokens[index]
        if not (
            inline.type == "inline"
            and tokens[index - 1].type == "paragraph_open"
            and tokens[index - 2].type == "list_item_open"
            and inline.children
            and inline.children[0].type == "text"
        ):
            continue
        match = TASK_PATTERN.match(inline.children[0].content)
        if match is None:
            continue
        inline.children[0].content = inline.children[0].content[match.end() :]
        checked = " checked" if match.group(1) in "xX" else ""
        checkbox = Token("html_inline", "", 0)
        # Our own markup, not the agent's: html_inline tokens render as they are even with the
        # parser's html option off, and nh3 below still checks them.
        # In a label with the item's text: a checkbox needs a name (screen readers, axe).
        checkbox.content = f'<label><input type="checkbox" disabled{checked}> '
        closing = Token("html_inline", "", 0)
        closing.content = "</label>"
        inline.children.insert(0, checkbox)
        inline.children.append(closing)
        tokens[index - 2].attrSet("class", "task-list-item")


def _table_alignment(state: StateCore) -> None:
    """Column alignment as a class (`align-right`) instead of a style attribute: the pages'
    Content-Security-Policy allows no inline style."""
    for token in state.tokens:
        if token.type not in {"th_open", "td_open"}:
            continue
        match = ALIGN_PATTERN.match(str(token.attrs.pop("style", "")))
        if match:
            token.attrSet("class", f"align-{match.group(1)}")


def _headings_below_title(state: StateCore) -> None:
    """The review page's h1 is the plan's title: the plan's own headings go one level down."""
    for token in state.tokens:
        if token.type in {"heading_open", "heading_close"}:
            token.tag = f"h{min(6, int(token.tag[1]) + 1)}"


_parser = (
    MarkdownIt("commonmark", {"html": False, "highlight": _highlight})
    .enable(["table", "strikethrough"])
    # An image would make the reviewer's browser fetch any address an agent chose.
    .disable("image")
)
_parser.core.ruler.push("task_lists", _task_lists)
_parser.core.ruler.push("table_alignment", _table_alignment)
_page_parser = (
    MarkdownIt("commonmark", {"html": False, "highlight": _highlight})
    .enable(["table", "strikethrough"])
    .disable("image")
)
_page_parser.core.ruler.push("task_lists", _task_lists)
_page_parser.core.ruler.push("table_alignment", _table_alignment)
_page_parser.core.ruler.push("headings_below_title", _headings_below_title)

# --- what rendering a plan costs, counted before it is rendered ----------------------------------

# What each costs to render (parse, HTML, nh3), measured with markdown-it-py 4.3 on the
# development machine while it was busy, in microseconds there (about 2.5 of a quiet machine's):
# a character that starts inline syntax (the others are skipped in bulk), a run of the characters
# that are taken a run at a time (emphasis, code spans, quotes), a line, a list item's line, a
# table cell. Rendering is linear in each (measured from 12,500 to 100,000 characters), so their
# sum bounds its time.
SYNTAX_COST = {
    "[": 75, "&": 35, "<": 30, "\\": 25, "#": 25, "!": 20, "$": 20, "^": 15, "{": 15, "]": 15,
    "%": 15, "=": 10, "+": 10, "@": 10, "}": 10, ":": 10,
}  # fmt: skip
RUN_COST = {"_": 80, "*": 60, "~": 45, "`": 35, ">": 15, "-": 10}
RUNS = {char: re.compile(f"{re.escape(char)}+") for char in RUN_COST}
LINE_COST = 250
LIST_ITEM_COST = 500
CELL_COST = 100
LIST_ITEM = re.compile(r"^[ \t>]*(?:[-+*]|\d{1,9}[.)])[ \t]", re.MULTILINE)
# About 0.6 s of a quiet machine: the review page stays within a second with everything else on
# it, and a plan of 1,500 list items, each with code, emphasis and a link, still renders. A count,
# not a timer, so a plan is shown the same way on every load and under any load.
RENDER_BUDGET = 1_600_000


# A page asks for the same plan's cost a few times (its body, its note, what changed).
@lru_cache(maxsize=16)
def render_cost(markdown: str) -> int:
    """An upper estimate of what rendering the plan costs (in SYNTAX_COST's units): a few passes
    of `str.count` and of simple patterns, a few milliseconds for the densest plan."""
    cost = sum(markdown.count(char) * weight for char, weight in SYNTAX_COST.items())
    cost += sum(len(RUNS[char].findall(markdown)) * weight for char, weight in RUN_COST.items())
    cost += markdown.count("\n") * LINE_COST + markdown.count("|") * CELL_COST
    return cost + len(LIST_ITEM.findall(markdown)) * LIST_ITEM_COST


def renders_as_text(markdown: str) -> bool:
    """Whether the plan is past the rendering budget, and so shown as its text."""
    return render_cost(markdown) > RENDER_BUDGET


def _as_text(markdown: str) -> SafeString:
    """The plan as its text, escaped: for plans that would take too long to render."""
    return format_html('<pre class="plan-as-text">{}</pre>', markdown)


@contextmanager
def _highlight_budget() -> Iterator[None]:
    """Each rendering starts with the whole of HIGHLIGHT_CHARS."""
    left = _highlight_left.set(HIGHLIGHT_CHARS)
    try:
        yield
    finally:
        _highlight_left.reset(left)


def _rendered(parser: MarkdownIt, markdown: str) -> SafeString:
    if renders_as_text(markdown):
        return _as_text(markdown)
    with _highlight_budget():
        return _sanitized(parser.render(markdown))


BLOCK_TAG = re.compile(
    r"</?(?:p|br|hr|h[1-6]|li|ul|ol|pre|blockquote|table|thead|tbody|tr|th|td)\b[^>]*>"
)
# Closing marks are taken off after the match (HEADING_MARKS): a pattern that both matched the
# text lazily and skipped trailing space took cubic time on a heading with many spaces in it.
HEADING_LINE = re.compile(r"^[ \t]{0,3}#{1,6}[ \t]+(.*)$")
HEADING_MARKS = re.compile(r"^#+[ \t]*|(?:^|[ \t]+)#+[ \t]*$")
# A title is at most 90 characters; the markdown it comes from is cut well past that first, so
# a plan's one long line costs its title a few milliseconds, not seconds on every page.
TITLE_SOURCE_CHARS = 500


def plain_title(markdown: str) -> str:
    """One line of markdown as the words a reader sees: code spans, emphasis and links give
    their text, heading marks go. Still text, escaped wherever it is shown."""
    text = HEADING_MARKS.sub("", markdown.strip()[:TITLE_SOURCE_CHARS].strip())
    words: list[str] = []
    for token in _parser.parseInline(text)[0].children or []:
        if token.type in {"text", "code_inline"}:
            words.append(token.content)
        elif token.type in {"softbreak", "hardbreak"}:
            words.append(" ")
    return re.sub(r"\s+", " ", "".join(words)).strip()


def without_title(markdown: str, title: str) -> str:
    """The plan without its first line when that line is the heading the page shows as its
    title, so the title is not said twice."""
    lines = markdown.splitlines()
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is None:
        return markdown
    heading = HEADING_LINE.match(lines[first])
    if heading and plain_title(heading.group(1)) == title:
        return "\n".join(lines[first + 1 :])
    return markdown


def render_plan_page(markdown: str, *, title: str) -> SafeString:
    """A plan for its review page, under the page's h1 (its title); as its text when it is past
    the rendering budget (`renders_as_text`)."""
    if renders_as_text(markdown):
        return _as_text(markdown)
    return _rendered(_page_parser, without_title(markdown, title))


def plain_text(html: str) -> str:
    """The words of rendered HTML as a reader selects them, whitespace collapsed."""
    text = BLOCK_TAG.sub(" ", html)
    text = re.sub(r"<[^>]+>", "", text)
    return re.sub(r"\s+", " ", unescape(text)).strip()


def render_plan(markdown: str) -> SafeString:
    """Sanitized HTML for a plan. `javascript:` and other non-web links do not survive."""
    return _rendered(_parser, markdown)


def _sanitized(html: str) -> SafeString:
    clean = nh3.clean(
        html,
        tags=ALLOWED_TAGS,
        attributes=ALLOWED_ATTRIBUTES,
        url_schemes={"http", "https", "mailto"},
        link_rel="noopener noreferrer nofollow",
        strip_comments=True,
    )
    # The one place agent text is marked safe: it has just been rendered with raw HTML off and
    # sanitized by nh3 against the allow-list above, so no agent markup can reach the page.
    return mark_safe(clean)  # noqa: S308


# --- what changed, marked inside the rendered plan ----------------------------------------------

LIST_OPENS = {"bullet_list_open", "ordered_list_open"}
LIST_MARKER = re.compile(r"^\s*(?:[-+*]|\d{1,9}[.)])(?:\s+|$)")
CHANGE_WORDS = {"added": "Added", "removed": "Removed"}


@dataclass(frozen=True)
class Block:
    """One top-level piece of a rendered plan (a paragraph, heading, code block, table), or one
    item of a top-level list; `key` is its source text, for comparing two revisions."""

    key: str
    tokens: list[Token]
    list_open: Token | None = None
    list_close: Token | None = None
    # The item's place in its list (0 for the first), for numbering a list shown in parts.
    number: int = 0


def _closing(tokens: list[Token], start: int) -> int:
    """The index of the token that closes the one at `start` (itself when it opens nothing)."""
    if tokens[start].nesting != 1:
        return start
    level = tokens[start].level
    end = start + 1
    while not (tokens[end].level == level and tokens[end].nesting == -1):
        end += 1
    return end


def _source(lines: list[str], line_map: list[int] | None) -> str:
    if not line_map:
        return ""
    return "\n".join(line.strip() for line in lines[line_map[0] : line_map[1]]).strip()


def plan_blocks(markdown: str, *, title: str) -> list[Block]:
    """The plan as its review page shows it, in blocks; a list counts item by item, so one
    changed step marks that step, not the whole list. Linear in the plan's size."""
    text = without_title(markdown, title)
    lines = text.splitlines()
    tokens = _page_parser.parse(text)
    blocks: list[Block] = []
    start = 0
    while start < len(tokens):
        end = _closing(tokens, start)
        opening = tokens[start]
        if opening.type in LIST_OPENS:
            item, number = start + 1, 0
            while item < end:
                item_end = _closing(tokens, item)
                source = LIST_MARKER.sub("", _source(lines, tokens[item].map), count=1)
                key = f"{opening.type} {opening.markup}\n{source}"
                item_tokens = tokens[item : item_end + 1]
                blocks.append(Block(key, item_tokens, opening, tokens[end], number))
                item, number = item_end + 1, number + 1
        else:
            blocks.append(Block(_source(lines, opening.map), tokens[start : end + 1]))
        start = end + 1
    return blocks


def _tag(change: str) -> Token:
    tag = Token("html_block", "", 0)
    # Our own markup, as the task list's checkbox: a word, not colour alone, says what changed.
    tag.content = f'<span class="change-tag">{CHANGE_WORDS[change]}</span>'
    return tag


def _marked_item(tokens: list[Token], change: str) -> list[Token]:
    if change == "same":
        return tokens
    opening = copy.copy(tokens[0])
    opening.attrs = dict(opening.attrs)
    classes = f"{opening.attrs.get('class', '')} change change-{change}".strip()
    opening.attrSet("class", classes)
    return [opening, _tag(change), *tokens[1:]]


def same_list(one: Token | None, other: Token | None) -> bool:
    return (
        one is not None
        and other is not None
        and (one.type, one.markup) == (other.type, other.markup)
    )


def render_marked(blocks: list[tuple[str, Block]]) -> SafeString:
    """Blocks of two revisions in reading order, each "same", "added" or "removed", rendered
    as one plan: added and removed blocks are wrapped (list items classed) and labelled."""
    with _highlight_budget():
        return _sanitized(_render_marked(blocks))


def _render_marked(blocks: list[tuple[str, Block]]) -> str:
    render = _page_parser.renderer.render
    options = _page_parser.options
    html: list[str] = []
    index = 0
    while index < len(blocks):
        change, block = blocks[index]
        if block.list_open is None or block.list_close is None:
            rendered = render(block.tokens, options, {})
            if change != "same":
                rendered = (
                    f'<div class="change change-{change}">{_tag(change).content}{rendered}</div>'
                )
            html.append(rendered)
            index += 1
            continue
        end = index
        while end < len(blocks) and same_list(blocks[end][1].list_open, block.list_open):
            end += 1
        group = blocks[index:end]
        shown = next((b for c, b in group if c != "removed"), block)
        opening = copy.copy(shown.list_open)
        if opening.type == "ordered_list_open":
            # A list shown in parts (a block between its items changed) numbers on.
            opening.attrs = dict(opening.attrs)
            first = int(opening.attrs.get("start", 1))
            if shown.number + first != 1:
                opening.attrSet("start", str(shown.number + first))
        tokens = [opening]
        for item_change, item in group:
            tokens += _marked_item(item.tokens, item_change)
        tokens.append(shown.list_close)
        html.append(render(tokens, options, {}))
        index = end
    return "".join(html)
