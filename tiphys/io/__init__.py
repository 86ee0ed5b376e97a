"""Resource providers: names to bytes."""
from .resources import (Resource, ResourceProvider, ResourceReader, get_provider,
                        read_resource, register_provider)

__all__ = ["Resource", "ResourceProvider", "ResourceReader", "get_provider",
           "read_resource", "register_provider"]
