package org.pixelflight.spark;

import java.io.IOException;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;

import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.function.MapPartitionsFunction;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.util.LongAccumulator;
import org.apache.spark.util.TaskCompletionListener;

/**
 * One task of {@code pixelflight_map}: its partition's rows go to the
 * sidecar in slices of up to maxRows rows and about maxBatchBytes, through
 * the data source's {@link SidecarExchange} (window, restarts, strict
 * mode); each answer comes back as rows of the kept columns and the op's
 * results, in input order. A null image is sent as a null row and gets the
 * sidecar's error in its own row.
 */
final class MapPartition implements MapPartitionsFunction<Row, Row> {
  private static final long serialVersionUID = 1L;

  private final MapOptions opts;
  private final LongAccumulator[] metrics; // ScanMetrics.accumulators

  MapPartition(MapOptions opts, LongAccumulator[] metrics) {
    this.opts = opts;
    this.metrics = metrics;
  }

  @Override
  public Iterator<Row> call(Iterator<Row> input) throws IOException {
    Rows rows = new Rows(opts, metrics, input);
    TaskContext task = TaskContext.get();
    if (task != null) { // a task that stops early (a LIMIT, a failure) closes its exchange
      task.addTaskCompletionListener((TaskCompletionListener) ctx -> rows.close());
    }
    return rows;
  }

  /** The task's output rows, made as Spark reads them. */
  private static final class Rows implements Iterator<Row>, AutoCloseable {
    private final MapOptions opts;
    private final LongAccumulator[] metrics;
    private final Iterator<Row> input;
    private final BufferAllocator alloc = new RootAllocator();
    private final List<String> resultNames;
    private final StructType results;
    private final ArrayDeque<Object[]> kept = new ArrayDeque<>(); // of the rows sent and not answered yet
    private final ArrayDeque<Row> ready = new ArrayDeque<>();
    private SidecarExchange exchange;
    private long sent; // rows made into slices, for labels
    private long answered; // rows answered, for the metrics
    private long errorRows;
    private boolean done;

    Rows(MapOptions opts, LongAccumulator[] metrics, Iterator<Row> input) {
      this.opts = opts;
      this.metrics = metrics;
      this.input = input;
      results = opts.resultSchema();
      resultNames = Arrays.asList(results.fieldNames());
    }

    @Override
    public boolean hasNext() {
      try {
        while (ready.isEmpty() && !done) {
          if (exchange == null) {
            exchange = new SidecarExchange(alloc, opts, resultNames, this::slice);
          }
          VectorSchemaRoot res = exchange.next();
          if (res == null) {
            close();
          } else {
            answer(res); // none where an answer has no rows
          }
        }
        return !ready.isEmpty();
      } catch (IOException e) {
        throw MapPartition.<RuntimeException>unchecked(e);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException("pixelflight: interrupted", e);
      }
    }

    @Override
    public Row next() {
      if (!hasNext()) {
        throw new NoSuchElementException();
      }
      return ready.removeFirst();
    }

    /** The rows of an answer: for the oldest rows sent, as answers come in order. */
    private void answer(VectorSchemaRoot res) {
      int n = res.getRowCount();
      List<FieldVector> cols = res.getFieldVectors();
      FieldVector error = res.getVector("error"); // the sidecar always sends it
      answered += n;
      for (int i = 0; i < n; i++) {
        Object[] k = kept.removeFirst();
        Object[] v = Arrays.copyOf(k, k.length + cols.size());
        for (int c = 0; c < cols.size(); c++) {
          v[k.length + c] = value(cols.get(c).getObject(i), results.fields()[c].dataType());
        }
        ready.addLast(RowFactory.create(v));
        if (!error.isNull(i)) {
          errorRows++;
        }
      }
    }

    /** The next rows, up to maxRows of them and about maxBatchBytes; null after the last. */
    private Slice slice() {
      if (!input.hasNext()) {
        return null;
      }
      List<byte[]> content = new ArrayList<>();
      List<String> labels = new ArrayList<>();
      long bytes = 0;
      while (input.hasNext() && content.size() < opts.maxRows && (content.isEmpty() || bytes < opts.maxBatchBytes)) {
        Row r = input.next();
        byte[] b = r.isNullAt(opts.image) ? null : (byte[]) r.get(opts.image);
        Object[] k = new Object[opts.keep.length];
        for (int i = 0; i < k.length; i++) {
          k[i] = r.get(opts.keep[i]);
        }
        kept.addLast(k);
        content.add(b);
        labels.add(opts.label >= 0 && !r.isNullAt(opts.label) ? r.getString(opts.label)
            : "row " + sent + " of partition " + partition());
        bytes += b == null ? 0 : b.length;
        sent++;
      }
      return new Slice(alloc, content.toArray(new byte[0][]), labels.toArray(new String[0]));
    }

    private static String partition() {
      TaskContext t = TaskContext.get();
      return t == null ? "?" : Integer.toString(t.partitionId());
    }

    @Override
    public void close() {
      if (done) {
        return;
      }
      done = true;
      if (exchange != null) {
        long[] c = exchange.counts();
        long[] v = {answered, errorRows, c[3], c[4], c[0], c[1], c[2]}; // ScanMetrics.values' order
        for (int i = 0; i < v.length; i++) {
          metrics[i].add(v[i]);
        }
        exchange.close();
      }
      try {
        alloc.close();
      } catch (IllegalStateException leak) {
        System.err.println("pixelflight: " + leak.getMessage());
      }
    }
  }

  /**
   * Throws e, checked or not, from a method that may not declare it
   * (Iterator.hasNext): the task fails with the exchange's IOException
   * itself, as the data source's do, not wrapped in a second exception of
   * the same message.
   */
  @SuppressWarnings("unchecked")
  private static <E extends Throwable> E unchecked(Throwable e) throws E {
    throw (E) e;
  }

  /**
   * An Arrow value (FieldVector.getObject: Text, a List, a Map for a
   * struct, or a boxed number or byte[]) as the Row Spark's encoder takes
   * for t.
   */
  static Object value(Object v, DataType t) {
    if (v == null) {
      return null;
    }
    if (t instanceof StringType) {
      return v.toString();
    }
    if (t instanceof ArrayType a) {
      List<?> l = (List<?>) v;
      Object[] out = new Object[l.size()];
      for (int i = 0; i < out.length; i++) {
        out[i] = value(l.get(i), a.elementType());
      }
      return out;
    }
    if (t instanceof StructType s) {
      Map<?, ?> m = (Map<?, ?>) v;
      StructField[] f = s.fields();
      Object[] out = new Object[f.length];
      for (int i = 0; i < f.length; i++) {
        out[i] = value(m.get(f[i].name()), f[i].dataType());
      }
      return RowFactory.create(out);
    }
    return v;
  }
}
