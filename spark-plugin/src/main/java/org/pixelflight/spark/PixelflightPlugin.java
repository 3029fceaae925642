package org.pixelflight.spark;

import org.apache.spark.api.plugin.DriverPlugin;
import org.apache.spark.api.plugin.ExecutorPlugin;
import org.apache.spark.api.plugin.SparkPlugin;

/**
 * Starts one pixelflight sidecar per Spark executor and stops it with the
 * executor. Enable it with
 *
 * <pre>
 * spark.jars     /path/to/pixelflight-spark-plugin.jar
 * spark.plugins  org.pixelflight.spark.PixelflightPlugin
 * </pre>
 *
 * Settings are spark.pixelflight.* keys; see {@link Sidecar}.
 */
public class PixelflightPlugin implements SparkPlugin {
  @Override
  public DriverPlugin driverPlugin() {
    return null;
  }

  @Override
  public ExecutorPlugin executorPlugin() {
    return new Sidecar();
  }

}
