from __future__ import annotations

from dashboard.client.cli import main

raise SystemExit(main())
