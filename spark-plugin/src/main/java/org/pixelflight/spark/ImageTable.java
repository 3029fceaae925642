package org.pixelflight.spark;

import java.util.Arrays;
import java.util.Set;

import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.read.SupportsPushDownRequiredColumns;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/** A read of image files through an op; its scans keep only the (top-level) columns a query uses. */
final class ImageTable implements SupportsRead {
  private final StructType schema;

  ImageTable(StructType schema) {
    this.schema = schema;
  }

  @Override
  public String name() {
    return "pixelflight";
  }

  @Override
  public StructType schema() {
    return schema;
  }

  @Override
  public Set<TableCapability> capabilities() {
    return Set.of(TableCapability.BATCH_READ);
  }

  @Override
  public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
    ReadOptions opts = new ReadOptions(options);
    return new SupportsPushDownRequiredColumns() {
      private StructType required = schema;

      @Override
      public Scan build() {
        return new ImageScan(opts, required);
      }

      /**
       * Top-level columns only: Spark may ask for part of a struct column
       * (faces.w: array<struct<w>>), but the sidecar sends each result
       * column whole and the reader hands its vector to Spark as it is, so
       * each requested column keeps the table's full type (Spark then
       * takes the fields it wants from the whole struct).
       */
      @Override
      public void pruneColumns(StructType requiredSchema) {
        required = new StructType(Arrays.stream(requiredSchema.fieldNames())
            .map(schema::apply).toArray(StructField[]::new));
      }
    };
  }
}
