"""`django_workflows.streams`: a stream served to a browser as Server-Sent Events."""

from .sse import sse_response

__all__ = ["sse_response"]
