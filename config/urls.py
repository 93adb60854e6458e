from django.contrib import admin
from django.urls import include, path
from django.views.generic import RedirectView

from core import adminutils

admin.site.site_header = "pricefeed"
admin.site.site_title = "pricefeed"
# Django's *Delete selected*, its confirmation and message naming the objects in the
# form the sentence needs (core/grammar.py).
admin.site.add_action(adminutils.delete_selected, "delete_selected")

urlpatterns = [
    path("", RedirectView.as_view(url="/admin/", permanent=False)),
    path("admin/", admin.site.urls),
    # set_language: the language switcher in the admin's header posts here.
    path("i18n/", include("django.conf.urls.i18n")),
    # The read-only API, its schema (/api/schema/) and reference page (/api/docs/).
    path("api/", include("api.urls")),
    # Our published prices as feeds, each at its token's URL (feeds.views).
    path("feeds/", include("feeds.urls")),
]
