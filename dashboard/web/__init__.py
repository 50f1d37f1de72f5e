"""Pages and the HTTP API: the overview, boards and settings (`views`), the agents' API and its
documentation (`api`, `api_docs`) and what every page's header needs (`context_processors`).
"""
