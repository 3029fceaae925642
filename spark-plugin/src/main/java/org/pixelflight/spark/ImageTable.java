package org.pixelflight.spark;

import java.util.Set;

import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.read.SupportsPushDownRequiredColumns;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/** A read of image files through an op; its scans keep only the columns a query uses. */
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

      @Override
      public void pruneColumns(StructType requiredSchema) {
        required = requiredSchema;
      }
    };
  }
}
