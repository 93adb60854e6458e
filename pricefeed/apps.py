from django.apps import AppConfig


class PricefeedConfig(AppConfig):
    name = "pricefeed"
    verbose_name = "Price lists"
