package org.pixelflight.spark;

import org.apache.spark.SparkContext;
import org.apache.spark.util.LongAccumulator;

import org.apache.spark.sql.connector.metric.CustomMetric;
import org.apache.spark.sql.connector.metric.CustomSumMetric;
import org.apache.spark.sql.connector.metric.CustomTaskMetric;

/**
 * The data source's metrics on its scan node in Spark's UI and REST API
 * (DataSource V2 custom metrics): each task's {@link ImageReader} reports
 * its counts ({@link #values}), Spark sums them over the tasks. Spark makes
 * each metric on the driver by its class name, so each is a public class
 * with a public constructor.
 */
public final class ScanMetrics {
  private ScanMetrics() {}

  /** The metrics a scan declares, in the order values reports them. */
  static CustomMetric[] supported() {
    return new CustomMetric[] {new Rows(), new ErrorRows(), new CpuRows(), new GpuRows(), new BytesSent(),
        new BytesReceived(), new SidecarMillis()};
  }

  /** One task's counts so far: rows, error rows, rows on the CPU, on a GPU, bytes out and in, ms waited. */
  static CustomTaskMetric[] values(long rows, long errorRows, long cpuRows, long gpuRows, long bytesSent,
      long bytesReceived, long sidecarMillis) {
    CustomMetric[] m = supported();
    long[] v = {rows, errorRows, cpuRows, gpuRows, bytesSent, bytesReceived, sidecarMillis};
    CustomTaskMetric[] out = new CustomTaskMetric[m.length];
    for (int i = 0; i < m.length; i++) {
      String name = m[i].name();
      long value = v[i];
      out[i] = new CustomTaskMetric() {
        @Override
        public String name() {
          return name;
        }

        @Override
        public long value() {
          return value;
        }
      };
    }
    return out;
  }

  /**
   * The same counts for pixelflight_map, whose tasks have no scan node:
   * named accumulators (on each stage's page of Spark's UI and in its REST
   * API's stages), registered on the driver when a query is analysed, in
   * the order values reports them.
   */
  static LongAccumulator[] accumulators(SparkContext sc) {
    CustomMetric[] m = supported();
    LongAccumulator[] out = new LongAccumulator[m.length];
    for (int i = 0; i < m.length; i++) {
      out[i] = sc.longAccumulator(m[i].description());
    }
    return out;
  }

  /** A sum over the tasks, named and described. */
  abstract static class Sum extends CustomSumMetric {
    private final String name;
    private final String description;

    Sum(String name, String description) {
      this.name = name;
      this.description = description;
    }

    @Override
    public String name() {
      return name;
    }

    @Override
    public String description() {
      return description;
    }
  }

  public static final class Rows extends Sum {
    public Rows() {
      super("pixelflightRows", "pixelflight rows");
    }
  }

  public static final class ErrorRows extends Sum {
    public ErrorRows() {
      super("pixelflightErrorRows", "pixelflight error rows");
    }
  }

  public static final class CpuRows extends Sum {
    public CpuRows() {
      super("pixelflightCpuRows", "pixelflight rows run on the CPU");
    }
  }

  public static final class GpuRows extends Sum {
    public GpuRows() {
      super("pixelflightGpuRows", "pixelflight rows run on a GPU");
    }
  }

  public static final class BytesSent extends Sum {
    public BytesSent() {
      super("pixelflightBytesSent", "pixelflight image bytes sent");
    }
  }

  public static final class BytesReceived extends Sum {
    public BytesReceived() {
      super("pixelflightBytesReceived", "pixelflight result bytes received");
    }
  }

  public static final class SidecarMillis extends Sum {
    public SidecarMillis() {
      super("pixelflightSidecarMs", "pixelflight time waiting on the sidecar (ms)");
    }
  }
}
