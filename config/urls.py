from django.contrib import admin
from django.urls import path
from django.views.generic import RedirectView

admin.site.site_header = "pricefeed"
admin.site.site_title = "pricefeed"

urlpatterns = [
    path("", RedirectView.as_view(url="/admin/", permanent=False)),
    path("admin/", admin.site.urls),
]
