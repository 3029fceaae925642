package org.pixelflight.spark;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.Map;

import org.apache.hadoop.conf.Configuration;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.broadcast.Broadcast;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.connector.metric.CustomMetric;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.util.SerializableConfiguration;

/** Lists the files on the driver, packs them into partitions and hands each to an {@link ImageReader}. */
final class ImageScan implements Scan, Batch {
  private final ReadOptions opts;
  private final StructType required;

  ImageScan(ReadOptions opts, StructType required) {
    this.opts = opts;
    this.required = required;
  }

  @Override
  public StructType readSchema() {
    return required;
  }

  @Override
  public String description() {
    return "pixelflight " + opts.op + " " + opts.params + " over " + opts.paths;
  }

  @Override
  public CustomMetric[] supportedCustomMetrics() {
    return ScanMetrics.supported();
  }

  @Override
  public Batch toBatch() {
    return this;
  }

  @Override
  public InputPartition[] planInputPartitions() {
    SparkSession spark = SparkSession.active();
    try {
      return FileListing.partitions(opts, hadoopConf(spark), spark).toArray(new InputPartition[0]);
    } catch (IOException e) {
      throw new UncheckedIOException("pixelflight: cannot list " + opts.paths + ": " + e.getMessage(), e);
    }
  }

  /**
   * The factory, with the Hadoop settings broadcast as Spark's file sources
   * broadcast theirs: each executor deserializes them once per query, not
   * once per task.
   */
  @Override
  public PartitionReaderFactory createReaderFactory() {
    SparkSession spark = SparkSession.active();
    Broadcast<SerializableConfiguration> conf = JavaSparkContext.fromSparkContext(spark.sparkContext())
        .broadcast(new SerializableConfiguration(hadoopConf(spark)));
    return new ImageReaderFactory(opts, required, conf);
  }

  /** The session's Hadoop settings, with the read's fs.* options on top (as file sources take them). */
  private Configuration hadoopConf(SparkSession spark) {
    Configuration conf = new Configuration(spark.sparkContext().hadoopConfiguration());
    for (Map.Entry<String, String> e : opts.all.entrySet()) {
      if (e.getKey().startsWith("fs.")) {
        conf.set(e.getKey(), e.getValue());
      }
    }
    return conf;
  }
}
