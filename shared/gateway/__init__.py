"""Refetching a payment from its gateway's API: the webhook is a hint, the API is the truth."""
