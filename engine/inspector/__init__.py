"""The memory inspector: a static web page (plain HTML, CSS and JavaScript, no build step) shipped
in the package and served by `kioku serve` at `/inspector/`. It talks only to the memory API."""

from importlib.resources import files
from pathlib import Path


def static_dir() -> Path:
    """The folder of the page's files inside the installed package."""
    return Path(str(files(__name__).joinpath("static")))
