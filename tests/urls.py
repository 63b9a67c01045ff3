from django.contrib import admin
from django.urls import include, path

from tests.streams import views as stream_views

urlpatterns = [
    path("admin/", admin.site.urls),
    path("workflows/", include("django_workflows.urls")),
    path("streams/<str:id>/<str:name>/", stream_views.events),
    path("astreams/<str:id>/<str:name>/", stream_views.aevents),
    path("stream-page/<str:id>/<str:name>/", stream_views.page),
]
