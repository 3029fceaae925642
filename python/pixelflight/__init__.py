"""Client for the pixelflight image-kernel sidecar.

``pixelflight.client.Client`` talks Arrow Flight to a running sidecar;
``pixelflight.spark.map_images`` runs an op over a Spark DataFrame;
``pixelflight.results`` turns result rows into numpy arrays, PIL images
and files; ``pixelflight.plots`` draws benchmark and experiment figures.
``pixelflight.spark.read_images`` reads image files through an op with the
plugin jar's data source.
"""

from .client import Client, ForeignSocket, InvalidEndpoint, SidecarUnavailable, resolve_endpoint, result_schema
from .results import color_labels, draw_blobs, draw_faces, open_image, to_image, to_numpy, write_images

__all__ = ["Client", "ForeignSocket", "InvalidEndpoint", "SidecarUnavailable", "resolve_endpoint", "result_schema", "to_numpy",
           "to_image", "open_image", "color_labels", "draw_blobs", "draw_faces", "write_images"]
__version__ = "0.1.0"
