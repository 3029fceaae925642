package org.pixelflight.spark;

import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.LocalFileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.connector.metric.CustomTaskMetric;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ArrowColumnVector;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarBatch;

/**
 * One task: reads its files through Hadoop's FileSystem, streams them to
 * the sidecar ({@link SidecarExchange}) and returns each answer as a
 * columnar batch over the sidecar's Arrow buffers, with only the columns the
 * query needs: the sidecar sends only the result columns the query uses,
 * and error. A file that cannot be read, or is over maxFileBytes, is sent
 * as a null row and gets its own reason in the error column; in strict mode
 * it fails the task instead, as a failing row does at the sidecar.
 */
final class ImageReader implements PartitionReader<ColumnarBatch> {
  private final ReadOptions opts;
  private final StructType required;
  private final FilePart part;
  private final Configuration conf;
  private final BufferAllocator alloc = new RootAllocator();
  private final List<String> resultNames;
  private SidecarExchange exchange;
  private int pos; // the next file to read
  private ColumnarBatch batch;
  private VarCharVector errors; // the merged error column of batch, when it has local errors
  private Boolean local; // whether file: paths are Hadoop's LocalFileSystem (not another fs.file.impl)
  private long rows; // answered, for the scan's metrics
  private long errorRows;

  ImageReader(ReadOptions opts, StructType required, Configuration conf, FilePart part) {
    this.opts = opts;
    this.required = required;
    this.part = part;
    this.conf = conf;
    List<String> used = Arrays.asList(required.fieldNames());
    resultNames = Arrays.stream(opts.resultSchema().fieldNames())
        .filter(n -> n.equals("error") || used.contains(n)).toList();
  }

  @Override
  public boolean next() throws IOException {
    closeErrors();
    if (exchange == null) {
      exchange = new SidecarExchange(alloc, opts, resultNames, this::slice);
    }
    VectorSchemaRoot res;
    try {
      res = exchange.next();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IOException("pixelflight: interrupted", e);
    }
    if (res == null) {
      return false;
    }
    Slice s = exchange.answered();
    ColumnVector[] cols = new ColumnVector[required.fields().length];
    for (int i = 0; i < cols.length; i++) {
      StructField f = required.fields()[i];
      FieldVector v = switch (f.name()) {
        case "path" -> s.path;
        case "modificationTime" -> s.mtime;
        case "length" -> s.length;
        case "error" -> s.errors == null ? res.getVector("error") : mergeErrors(s, (VarCharVector) res.getVector("error"));
        default -> res.getVector(f.name());
      };
      cols[i] = new ArrowColumnVector(v);
    }
    batch = new ColumnarBatch(cols, s.rows);
    rows += s.rows;
    FieldVector remote = res.getVector("error"); // the sidecar always sends it
    for (int i = 0; i < s.rows; i++) {
      if (s.errors != null && s.errors[i] != null || !remote.isNull(i)) {
        errorRows++;
      }
    }
    return true;
  }

  /** This task's counts so far, for the scan node's metrics (ScanMetrics). */
  @Override
  public CustomTaskMetric[] currentMetricsValues() {
    long[] c = exchange == null ? new long[5] : exchange.counts();
    return ScanMetrics.values(rows, errorRows, c[3], c[4], c[0], c[1], c[2]);
  }

  @Override
  public ColumnarBatch get() {
    return batch;
  }

  /** The next files, up to maxRows of them and about maxBatchBytes; null after the last. */
  private Slice slice() throws IOException {
    if (pos >= part.paths.length) {
      return null;
    }
    int from = pos;
    long bytes = 0;
    List<byte[]> content = new ArrayList<>();
    String[] errs = null;
    while (pos < part.paths.length && pos - from < opts.maxRows && (pos == from || bytes < opts.maxBatchBytes)) {
      String err = null;
      byte[] b = null;
      long len = part.lengths[pos];
      if (len > opts.maxFileBytes) {
        err = "file is " + len + " bytes, over the pixelflight option maxFileBytes (" + opts.maxFileBytes + ")";
      } else {
        try {
          b = read(part.paths[pos], len);
          if (b.length > opts.maxFileBytes) {
            err = "file is over " + opts.maxFileBytes + " bytes (the pixelflight option maxFileBytes)";
            b = null;
          }
        } catch (IOException e) {
          err = "cannot read the file: " + e;
        }
      }
      if (err != null) {
        if (opts.strict) {
          throw new IOException("pixelflight: " + part.paths[pos] + ": " + err + " (strict)");
        }
        if (errs == null) {
          errs = new String[Math.min(opts.maxRows, part.paths.length - from)]; // the most rows this slice can have
        }
        errs[pos - from] = err;
      }
      content.add(b);
      bytes += b == null ? 0 : b.length;
      pos++;
    }
    return new Slice(alloc, part, from, content.toArray(new byte[0][]),
        errs == null ? null : Arrays.copyOf(errs, content.size()));
  }

  /**
   * A file's bytes, up to maxFileBytes + 1, into an array of the length the
   * listing found. Files of Hadoop's local file system are read with
   * java.nio: its streams cost more CPU than the read (a .crc lookup beside
   * each file, I/O statistics merged on close).
   */
  private byte[] read(String file, long listed) throws IOException {
    Path p = new Path(file);
    URI u = p.toUri();
    if (local == null) {
      local = FileSystem.get(URI.create("file:///"), conf) instanceof LocalFileSystem;
    }
    int limit = (int) Math.min(opts.maxFileBytes + 1, Integer.MAX_VALUE - 8);
    try (InputStream in = local && "file".equals(u.getScheme()) ? Files.newInputStream(Paths.get(u))
        : p.getFileSystem(conf).open(p)) {
      byte[] b = new byte[(int) Math.min(listed + 1, limit)];
      int n = in.readNBytes(b, 0, b.length);
      if (n < b.length) {
        return Arrays.copyOf(b, n);
      }
      byte[] rest = in.readNBytes(limit - n); // longer than when it was listed
      byte[] all = Arrays.copyOf(b, n + rest.length);
      System.arraycopy(rest, 0, all, n, rest.length);
      return all;
    }
  }

  /** The sidecar's error column with the reasons of the files that were not sent. */
  private FieldVector mergeErrors(Slice s, VarCharVector remote) {
    errors = new VarCharVector("error", alloc);
    errors.allocateNew(s.rows);
    for (int i = 0; i < s.rows; i++) {
      if (s.errors[i] != null) {
        errors.setSafe(i, s.errors[i].getBytes(StandardCharsets.UTF_8));
      } else if (!remote.isNull(i)) {
        errors.setSafe(i, remote.get(i));
      } else {
        errors.setNull(i);
      }
    }
    errors.setValueCount(s.rows);
    return errors;
  }

  private void closeErrors() {
    if (errors != null) {
      errors.close();
      errors = null;
    }
  }

  @Override
  public void close() {
    closeErrors();
    if (exchange != null) {
      exchange.close();
    }
    try {
      alloc.close();
    } catch (IllegalStateException leak) {
      System.err.println("pixelflight: " + leak.getMessage());
    }
  }
}
