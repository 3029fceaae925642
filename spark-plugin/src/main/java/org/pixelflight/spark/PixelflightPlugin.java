package org.pixelflight.spark;

import java.util.Map;

import org.apache.spark.SparkContext;
import org.apache.spark.api.plugin.DriverPlugin;
import org.apache.spark.api.plugin.ExecutorPlugin;
import org.apache.spark.api.plugin.PluginContext;
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
 * Settings are spark.pixelflight.* keys; see {@link Sidecar}. The driver
 * side only tells the executors what the driver knows: the Python that
 * PySpark's workers run, and in local mode the driver's GPUs (see
 * {@link Sidecar#driverConf}).
 */
public class PixelflightPlugin implements SparkPlugin {
  @Override
  public DriverPlugin driverPlugin() {
    return new DriverPlugin() {
      @Override
      public Map<String, String> init(SparkContext sc, PluginContext ctx) {
        return Sidecar.driverConf(sc.conf(), sc.isLocal(), ctx.resources());
      }
    };
  }

  @Override
  public ExecutorPlugin executorPlugin() {
    return new Sidecar();
  }

}
