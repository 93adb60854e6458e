"""/api/: the resources (views.py), the OpenAPI 3 schema and its reference page."""

from __future__ import annotations

from django.urls import path
from drf_spectacular.views import SpectacularAPIView

from . import reference, views

app_name = "api"

urlpatterns = [
    path("configs/", views.ConfigList.as_view(), name="config-list"),
    path("configs/<int:pk>/", views.ConfigDetail.as_view(), name="config-detail"),
    path("configs/<int:config_id>/catalogue/", views.Catalogue.as_view(), name="catalogue"),
    path("configs/<int:config_id>/history/", views.SkuHistory.as_view(), name="sku-history"),
    path("configs/<int:config_id>/changes/", views.Changes.as_view(), name="changes"),
    path("configs/<int:config_id>/unlinked/", views.UnlinkedLines.as_view(), name="unlinked-lines"),
    path("imports/", views.ImportList.as_view(), name="import-list"),
    path("imports/<int:pk>/", views.ImportDetail.as_view(), name="import-detail"),
    path("imports/<int:import_id>/items/", views.ImportItems.as_view(), name="import-items"),
    path("products/", views.ProductList.as_view(), name="product-list"),
    path("products/<int:pk>/", views.ProductDetail.as_view(), name="product-detail"),
    path("products/<int:product_id>/offers/", views.ProductOffers.as_view(), name="product-offers"),
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    path("docs/", reference.reference, name="docs"),
]
