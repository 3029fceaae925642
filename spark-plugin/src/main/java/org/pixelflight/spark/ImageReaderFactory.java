package org.pixelflight.spark;

import org.apache.spark.broadcast.Broadcast;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnarBatch;
import org.apache.spark.util.SerializableConfiguration;

/** Sent to the executors with each task: makes the task's {@link ImageReader}. */
final class ImageReaderFactory implements PartitionReaderFactory {
  private static final long serialVersionUID = 1L;

  private final ReadOptions opts;
  private final StructType required;
  private final Broadcast<SerializableConfiguration> hadoopConf;

  ImageReaderFactory(ReadOptions opts, StructType required, Broadcast<SerializableConfiguration> hadoopConf) {
    this.opts = opts;
    this.required = required;
    this.hadoopConf = hadoopConf;
  }

  @Override
  public boolean supportColumnarReads(InputPartition partition) {
    return true;
  }

  @Override
  public PartitionReader<ColumnarBatch> createColumnarReader(InputPartition partition) {
    return new ImageReader(opts, required, hadoopConf.value().value(), (FilePart) partition);
  }

  @Override
  public PartitionReader<InternalRow> createReader(InputPartition partition) {
    throw new UnsupportedOperationException("pixelflight reads columnar batches only");
  }
}
