"""The shop's own Django signals: what its workflows hear of, through `signal_on`."""

from __future__ import annotations

from django.dispatch import Signal

carrier_reported = Signal()
"""Sent with `delivery=<Delivery>` by `services.record_carrier_event()`, in the transaction that
saves what the carrier reported: the fulfilment's `signal_on` turns it into its signal."""
