"""What the agents' models cost: tokens and money, per session, agent and model."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from dashboard.models import Agent, Session


class Usage(models.Model):
    """One report of usage, stored so that a report sent again (an exporter's retry, a
    cumulative counter exported anew) replaces itself instead of adding up.

    `identity` names the report among its session's: an OpenTelemetry metric point's series
    (its metric and attributes) and start time, or a usage event's own id (a model request of
    Claude Code, an assistant message of opencode). Of two reports with one identity the one
    observed last is kept: a cumulative counter's latest value, a retried delta unchanged.
    A session's figures are the sum of its reports of one stream (`Stream`), never of two,
    since the same requests are reported by both.
    """

    class Stream(models.TextChoices):
        # Counters exported as OpenTelemetry metrics (Claude Code's cost and token counters).
        METRICS = "metrics", "metrics"
        # One report per model request or message (OpenTelemetry log events, opencode).
        EVENTS = "events", "events"

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="usage")
    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="usage")
    stream = models.CharField(max_length=10, choices=Stream.choices)
    identity = models.CharField(max_length=64)
    model = models.CharField(max_length=200, blank=True)
    input_tokens = models.BigIntegerField(default=0)
    output_tokens = models.BigIntegerField(default=0)
    cache_read_tokens = models.BigIntegerField(default=0)
    cache_creation_tokens = models.BigIntegerField(default=0)
    # In millionths of a US dollar: exact, and summed as integers by every database.
    cost_micros = models.BigIntegerField(default=0)
    # The agent reported no cost and the board made one from a price table.
    cost_estimated = models.BooleanField(default=False)
    # When the report was made, in nanoseconds since the epoch (the exporter's own clock).
    observed_ns = models.BigIntegerField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["session", "identity"], name="costs_usage_one_per_identity"
            )
        ]
        indexes = [models.Index(fields=["session", "stream"], name="costs_usage_session")]

    def __str__(self) -> str:
        return f"{self.session_id} {self.model} {self.identity[:8]}"


class Price(models.Model):
    """What a model's tokens cost, in US dollars per million tokens: the price table that makes
    a cost where an agent reports tokens only (Codex). A report's model takes the price of the
    longest `model` its name starts with ("gpt-5-codex" before "gpt-5"), after any provider
    prefix ("openai/gpt-5" is "gpt-5"). Shipped with the vendors' list prices (migration 0003);
    admins edit them on the prices page."""

    model = models.CharField(max_length=200, unique=True)
    input = models.DecimalField(max_digits=9, decimal_places=4)
    output = models.DecimalField(max_digits=9, decimal_places=4)
    cache_read = models.DecimalField(max_digits=9, decimal_places=4)
    cache_write = models.DecimalField(max_digits=9, decimal_places=4)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["model"]

    def __str__(self) -> str:
        return self.model


class Budget(models.Model):
    """What a project's sessions, or a person's, may cost a day or a month (the server's
    clock). At 80% spent the sessions that spend it ask for a look (their reviewers and owner
    are notified, once a period); at 100% they wait on a person as over budget, and with
    `stop_at_limit` their agents' tool calls are refused until a reviewer raises the budget or
    lets the session continue (until the period ends)."""

    class Scope(models.TextChoices):
        PROJECT = "project", "project"
        PERSON = "person", "person"

    class Period(models.TextChoices):
        DAY = "day", "a day"
        MONTH = "month", "a month"

    scope = models.CharField(max_length=10, choices=Scope.choices)
    project = models.ForeignKey(
        "dashboard.Project", on_delete=models.CASCADE, null=True, blank=True, related_name="+"
    )
    person = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, null=True, blank=True, related_name="+"
    )
    period = models.CharField(max_length=10, choices=Period.choices)
    limit_micros = models.BigIntegerField()
    stop_at_limit = models.BooleanField(default=False)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["project", "period"],
                condition=models.Q(scope="project"),
                name="costs_one_budget_per_project_period",
            ),
            models.UniqueConstraint(
                fields=["person", "period"],
                condition=models.Q(scope="person"),
                name="costs_one_budget_per_person_period",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.scope} budget {self.limit_micros / 1e6:.2f} {self.period}"


class BudgetHold(models.Model):
    """A session over a budget in one of its periods: it waits on a person (an open concern),
    and, if the budget stops at its limit, its agents' tool calls are refused while
    `continued_at` is null and the period (`until`) lasts."""

    budget = models.ForeignKey(Budget, on_delete=models.CASCADE, related_name="holds")
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="+")
    period_start = models.DateField()
    until = models.DateTimeField()
    continued_at = models.DateTimeField(null=True, blank=True)
    continued_by = models.CharField(max_length=150, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["budget", "session", "period_start"], name="costs_one_hold_per_period"
            )
        ]
        indexes = [models.Index(fields=["continued_at", "until"], name="costs_hold_open")]

    def __str__(self) -> str:
        return f"hold of session {self.session_id} by budget {self.budget_id}"


class BudgetNotice(models.Model):
    """That a budget's 80% was told in a period: once, whatever the sessions spending it."""

    budget = models.ForeignKey(Budget, on_delete=models.CASCADE, related_name="notices")
    period_start = models.DateField()
    level = models.PositiveSmallIntegerField()  # 80 or 100

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["budget", "period_start", "level"], name="costs_one_notice_per_level"
            )
        ]

    def __str__(self) -> str:
        return f"{self.level}% of budget {self.budget_id} from {self.period_start}"


class SessionSpend(models.Model):
    """What a session cost in one day or month (`Budget.Period`), measured again from its
    usage each time an export touches it while a budget of that kind exists. A budget's
    spending is the sum of these over its sessions: one row per session of the period, not one
    per report, so measuring it stays cheap on a year of a busy project's usage."""

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="+")
    period = models.CharField(max_length=10, choices=Budget.Period.choices)
    period_start = models.DateField()
    spent_micros = models.BigIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["session", "period", "period_start"], name="costs_one_spend_per_period"
            )
        ]
        indexes = [models.Index(fields=["period", "period_start"], name="costs_spend_period")]

    def __str__(self) -> str:
        return f"session {self.session_id} spent {self.spent_micros} from {self.period_start}"
