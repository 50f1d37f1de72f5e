"""Who sees which sessions: the one rule every page, socket, export and search asks.

Today a signed-in person sees every session on the dashboard (one team's shared board), and
an agent token reads only the sessions reported with it (`services.session_of_owner`). What
waits on a person, and who may decide it, is `planmode.permissions` (reviewers decide every
session; anyone else answers their own permission requests). When teams scope what a member
sees, this is the one place that changes.
"""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser


def sessions_sql(user: AbstractBaseUser) -> tuple[str, tuple]:
    """The sessions `user` may see, as a condition on the session table `s` with its
    parameters, for raw queries (search); ("", ()) is every session."""
    if not user.is_active:
        return "1 = 0", ()
    return "", ()
