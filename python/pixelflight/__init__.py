"""Client for the pixelflight image-kernel sidecar.

``pixelflight.client.Client`` talks Arrow Flight to a running sidecar;
``pixelflight.spark.map_images`` runs an op over a Spark DataFrame;
``pixelflight.spark.read_images`` reads image files through an op with the
plugin jar's data source.
"""

from .client import Client, SidecarUnavailable, resolve_endpoint, result_schema

__all__ = ["Client", "SidecarUnavailable", "resolve_endpoint", "result_schema"]
__version__ = "0.1.0"
