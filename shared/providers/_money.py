"""Decimal amounts -> integer minor units, by the currency's ISO 4217 exponent.

Providers that write money as a decimal (Shopify `"199.00"`, Mercado Pago `100.5`) are converted exactly: the
value is parsed as a `Decimal` (from the JSON text, never through a float) and scaled by the currency's number of
minor-unit digits, rounding half-up. Stdlib only.
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

# ISO 4217 currencies whose minor unit is not 1/100. Everything else has two decimals.
ZERO_DECIMAL_CURRENCIES = frozenset(
    {
        "BIF",
        "CLP",
        "DJF",
        "GNF",
        "ISK",
        "JPY",
        "KMF",
        "KRW",
        "PYG",
        "RWF",
        "UGX",
        "UYI",
        "VND",
        "VUV",
        "XAF",
        "XOF",
        "XPF",
    }
)
THREE_DECIMAL_CURRENCIES = frozenset({"BHD", "IQD", "JOD", "KWD", "LYD", "OMR", "TND"})
_MAX_VALUE = Decimal(10) ** 12  # a sanity bound; it also keeps Decimal -> int cheap on hostile exponents


def currency_exponent(currency: str) -> int:
    code = currency.upper()
    if code in ZERO_DECIMAL_CURRENCIES:
        return 0
    if code in THREE_DECIMAL_CURRENCIES:
        return 3
    return 2


def decimal_to_minor_units(value: object, currency: str) -> int:
    """A decimal amount (a `Decimal`, an `int`, or a decimal string such as "199.00") in minor units.

    Raises ValueError for anything else (a float, a boolean, NaN, an out-of-range or malformed number): callers
    turn it into their own error type. The message never holds the value.
    """
    if isinstance(value, bool) or not isinstance(value, int | Decimal | str):
        raise ValueError("not a decimal amount")
    try:
        amount = Decimal(value.strip()) if isinstance(value, str) else Decimal(value)
        if not amount.is_finite() or amount.copy_abs() >= _MAX_VALUE:
            raise ValueError("amount out of range")
        scaled = amount.scaleb(currency_exponent(currency))
        return int(scaled.to_integral_value(rounding=ROUND_HALF_UP))
    except InvalidOperation:
        raise ValueError("not a decimal amount") from None
