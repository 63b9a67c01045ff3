from __future__ import annotations

from django.urls import path

from . import views

app_name = "shop"

urlpatterns = [
    path("", views.index, name="index"),
    path("orders", views.place_order, name="place-order"),
    path("orders/<str:order_id>", views.order_page, name="order"),
    path("orders/<str:order_id>/events", views.order_events, name="order-events"),
    path("orders/<str:order_id>/fulfilment", views.fulfilment, name="fulfilment"),
    path("orders/<str:order_id>/cancel", views.cancel, name="cancel"),
    path("webhooks/carrier", views.carrier_webhook, name="carrier-webhook"),
]
