#!/usr/bin/env python
from __future__ import annotations

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")
    from django.core.exceptions import ImproperlyConfigured
    from django.core.management import execute_from_command_line

    try:
        execute_from_command_line(sys.argv)
    except ImproperlyConfigured as error:
        # A setting that cannot work (a misconfigured identity provider, a malformed number):
        # its one sentence, not a traceback.
        sys.exit(f"Agentboard cannot start: {error}")


if __name__ == "__main__":
    main()
