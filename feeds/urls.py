from django.urls import path

from . import views

app_name = "feeds"

urlpatterns = [
    path("<str:token>/", views.feed_view, name="feed"),
]
