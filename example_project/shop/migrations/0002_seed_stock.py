"""Stock the warehouse with the tutorial's kibble and a few more products."""

from django.db import migrations

STOCK = {
    "salmon-kibble-2kg": 25,
    "chicken-pate-12x85g": 40,
    "catnip-mouse": 100,
}


def seed_stock(apps, schema_editor):
    Stock = apps.get_model("shop", "Stock")
    for product_id, quantity in STOCK.items():
        Stock.objects.get_or_create(product_id=product_id, defaults={"quantity": quantity})


def unseed_stock(apps, schema_editor):
    Stock = apps.get_model("shop", "Stock")
    Stock.objects.filter(product_id__in=STOCK).delete()


class Migration(migrations.Migration):
    dependencies = [("shop", "0001_initial")]

    operations = [migrations.RunPython(seed_stock, unseed_stock)]
