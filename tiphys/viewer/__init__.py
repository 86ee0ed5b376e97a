"""The GGUI viewer and headless renderer: ``Viewer(m, d)`` and ``render(m, d)``."""
from .renderer import FreeCamera, RenderError, RenderOptions, Renderer, render
from .viewer import Viewer

__all__ = ["FreeCamera", "RenderError", "RenderOptions", "Renderer", "Viewer", "render"]
