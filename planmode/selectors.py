from __future__ import annotations


def pending_plan_count() -> int:
    """Plans waiting for a reviewer (plan review arrives with the planmode models)."""
    return 0
