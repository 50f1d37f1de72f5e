"""In a real browser: a reviewer selects words of a plan, comments on them, and the agent gets
the comment, quoted, with the rejection; the next revision's page shows it beside the changes."""

from __future__ import annotations

import pytest

from tests.conftest import login, screenshot
from tests.e2e.test_plan_review import REV_1, REV_2, agent_socket, exit_plan_mode, next_frame

pytestmark = pytest.mark.browser

SELECT = """(words) => {
    const body = document.querySelector('.plan-body');
    const walker = document.createTreeWalker(body, NodeFilter.SHOW_TEXT);
    let node;
    while ((node = walker.nextNode())) {
        const at = node.nodeValue.indexOf(words);
        if (at === -1) continue;
        const range = document.createRange();
        range.setStart(node, at);
        range.setEnd(node, at + words.length);
        const selection = window.getSelection();
        selection.removeAllRanges();
        selection.addRange(range);
        const box = range.getBoundingClientRect();
        return {x: box.left + box.width / 2, y: box.top + box.height / 2};
    }
    return null;
}"""


def test_a_comment_on_selected_words_reaches_the_agent_with_the_rejection(agentboard_server, page):
    server = agentboard_server
    login(page, server)
    with agent_socket(server) as agent:
        agent.send(exit_plan_mode(REV_1, frame_id="rev1"))
        plan_id = next_frame(agent)["result"]["id"]
        page.goto(f"{server.url}/plans/{plan_id}/")
        page.wait_for_selector("#connection[data-state=live]")

        # Selecting words of the plan offers to comment on them.
        spot = page.evaluate(SELECT, "Keep the response shape")
        page.mouse.click(spot["x"], spot["y"], click_count=0)
        page.dispatch_event(".plan-body", "mouseup")
        popup = page.get_by_role("button", name="Comment on the selection")
        popup.click()
        assert page.get_by_label("Text from the plan").input_value() == "Keep the response shape"
        page.get_by_role("textbox", name="Comment", exact=True).fill(
            "Clients rely on the total count; keep it."
        )
        page.get_by_role("button", name="Save comment").click()

        item = page.locator("#annotations .annotation")
        item.wait_for()
        assert "Clients rely on the total count" in item.inner_text()
        # The form clears when its own answer is back; the live list may show the comment first.
        page.wait_for_function(
            "() => document.querySelector('[data-annotation-form]').elements.quote.value === ''"
        )
        assert page.get_by_label("Text from the plan").input_value() == ""
        highlighted = page.evaluate("() => CSS.highlights.get('annotation-comment').size")
        assert highlighted == 1
        screenshot(page, "plan-annotated")

        # Comments alone do not make a rejection: the feedback box needs words too.
        page.get_by_role("button", name="Reject").click()
        assert page.get_by_text("comments alone are not enough").is_visible()
        page.get_by_label("Notes or feedback").fill("See my comment.")
        page.get_by_role("button", name="Reject").click()
        page.wait_for_selector("#decision-panel.is-rejected")
        rejected = next_frame(agent)
        assert rejected["plan"]["status"] == "rejected"
        assert (
            'On "Keep the response shape": Clients rely on the total count; keep it.'
            in rejected["plan"]["message"]
        )
        # Decided: the comment stays, and can no longer be changed.
        assert page.locator("#annotations .annotation").count() == 1
        assert page.get_by_role("button", name="Save comment").count() == 0

        agent.send(
            exit_plan_mode(
                REV_2.replace("Keep the response shape", "Add a cursor"), frame_id="rev2"
            )
        )
        second = next_frame(agent)["result"]["id"]
        page.goto(f"{server.url}/plans/{second}/")
        earlier = page.locator(".earlier-annotations")
        assert "Clients rely on the total count" in earlier.inner_text()
        assert "the text changed" in earlier.inner_text()
