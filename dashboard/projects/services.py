"""Changing a project: its name (every session of it shows the new one at once)."""

from __future__ import annotations

import unicodedata

from dashboard.core.changes import Changes, Outcome
from dashboard.core.errors import ServiceError
from dashboard.models import Project, Session

NAME_LENGTH = Project._meta.get_field("name").max_length


def project_name_checked(name: str) -> str:
    name = " ".join(name.split())
    if not name:
        raise ServiceError("validation_error", "Give the project a name.", status=422)
    if len(name) > NAME_LENGTH:
        raise ServiceError(
            "validation_error", f"A project's name has at most {NAME_LENGTH} characters.",
            status=422,
        )  # fmt: skip
    if any(unicodedata.category(ch)[0] == "C" for ch in name):
        raise ServiceError(
            "validation_error", "A project's name is plain text, without control characters.",
            status=422,
        )  # fmt: skip
    return name


def project_rename(*, project_pk: int, name: str) -> Outcome[Project]:
    """Rename the project; its sessions' rows and boards name it anew."""
    name = project_name_checked(name)
    project = Project.objects.select_for_update().filter(pk=project_pk).first()
    if project is None:
        raise ServiceError("not_found", "There is no such project.", status=404)
    project.name = name
    project.save(update_fields=["name"])
    sessions = Session.objects.filter(project_record=project)
    sessions.update(project_name=name)
    # Running sessions' rows and headers show it now; ended ones on their next render.
    running = set(sessions.filter(ended_at__isnull=True).values_list("pk", flat=True)[:500])
    return Outcome(project, Changes(sessions=running))
