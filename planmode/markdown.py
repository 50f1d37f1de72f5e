"""Plan markdown to HTML. Plans come from agents, so they are untrusted text: raw HTML is off in
the parser (it comes out as visible text), and the output is sanitized again with nh3."""

from __future__ import annotations

import re

import nh3
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
    "h1 h2 h3 h4 h5 h6 p br hr blockquote pre code span em strong s del a ul ol li input "
    "table thead tbody tr th td".split()
)
ALLOWED_ATTRIBUTES = {
    "a": {"href", "title"},
    "code": {"class"},
    "span": {"class"},
    "li": {"class"},
    "ul": {"class"},
    "ol": {"start"},
    "input": {"type", "checked", "disabled"},
    "th": {"class"},
    "td": {"class"},
}


def _highlight(code: str, language: str, attrs: object) -> str:
    """Pygments spans for a fenced block with a known language; "" keeps the plain block."""
    if not language:
        return ""
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
        checkbox.content = f'<input type="checkbox" disabled{checked}> '
        inline.children.insert(0, checkbox)
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


_parser = (
    MarkdownIt("commonmark", {"html": False, "highlight": _highlight})
    .enable(["table", "strikethrough"])
    # An image would make the reviewer's browser fetch any address an agent chose.
    .disable("image")
)
_parser.core.ruler.push("task_lists", _task_lists)
_parser.core.ruler.push("table_alignment", _table_alignment)


def render_plan(markdown: str) -> SafeString:
    """Sanitized HTML for a plan. `javascript:` and other non-web links do not survive."""
    html = _parser.render(markdown)
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
