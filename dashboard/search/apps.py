from __future__ import annotations

from django.apps import AppConfig


class SearchConfig(AppConfig):
    name = "dashboard.search"
    label = "search"
    verbose_name = "Search"

    def ready(self) -> None:
        from dashboard.search.api import router
        from dashboard.web.api import api

        # Its API beside the others (`/api/v1/search`).
        if router not in [registered for _, registered in api._routers]:
            api.add_router("", router)

        from dashboard.activity.services import PRUNE_LISTENERS, STORED_LISTENERS
        from dashboard.core.writer import writer
        from dashboard.search.indexer import (
            index_batch,
            queue_index_job,
            steps_pruned,
            steps_stored,
        )

        # What a batch stored is indexed in it; its steps as the activity app stores them.
        if index_batch not in writer.within_batch:
            writer.within_batch.append(index_batch)
        # Its job, held back a moment to take more at once, is queued at once on a drain or
        # a stop.
        if queue_index_job not in writer.held_back:
            writer.held_back.append(queue_index_job)
        if steps_stored not in STORED_LISTENERS:
            STORED_LISTENERS.append(steps_stored)
        # Pruned steps leave the index with them.
        if steps_pruned not in PRUNE_LISTENERS:
            PRUNE_LISTENERS.append(steps_pruned)
