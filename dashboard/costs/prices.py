"""The price table: a cost made from tokens where an agent reports none."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from dashboard.costs.models import Price

# A million tokens at a price in dollars per million tokens costs that many dollars: the
# price is also the cost of one token in millionths of a dollar (the unit costs are kept in).


@dataclass(frozen=True)
class Rates:
    input: Decimal
    output: Decimal
    cache_read: Decimal
    cache_write: Decimal


class PriceTable:
    """The prices as read once (one query), looked up by a reported model's name."""

    def __init__(self, prices: dict[str, Rates]) -> None:
        self.prices = prices
        # Longest first: "gpt-5-codex" is found before "gpt-5".
        self._names = sorted(prices, key=len, reverse=True)

    @classmethod
    def read(cls) -> PriceTable:
        return cls(
            {
                price.model.lower(): Rates(
                    price.input, price.output, price.cache_read, price.cache_write
                )
                for price in Price.objects.all()
            }
        )

    def rates(self, model: str) -> Rates | None:
        name = model.strip().lower().rsplit("/", 1)[-1]
        for known in self._names:
            if name.startswith(known):
                return self.prices[known]
        return None

    def cost_micros(
        self,
        model: str,
        *,
        input_tokens: int,
        output_tokens: int,
        cache_read_tokens: int,
        cache_creation_tokens: int,
    ) -> int | None:
        """The cost of these tokens in millionths of a dollar; None for a model not in the
        table."""
        rates = self.rates(model)
        if rates is None:
            return None
        total = (
            input_tokens * rates.input
            + output_tokens * rates.output
            + cache_read_tokens * rates.cache_read
            + cache_creation_tokens * rates.cache_write
        )
        return round(total)
