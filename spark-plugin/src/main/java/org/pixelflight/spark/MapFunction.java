package org.pixelflight.spark;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.util.LinkedHashMap;
import java.util.Map;

import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.FunctionTableSubqueryArgumentExpression;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.sql.catalyst.util.MapData;
import org.apache.spark.sql.types.MapType;
import org.apache.spark.sql.types.StringType;

/**
 * The {@code pixelflight_map} table function: any table or query of images
 * through the executors' sidecars, in the executors' JVMs (no Python), with
 * the data source's row contract: one row per input row, in order, a
 * failing row gets its reason in {@code error}, strict mode fails the task
 * instead, a restarting sidecar is retried, at most window batches in
 * flight per task.
 *
 * <pre>
 * SELECT * FROM pixelflight_map(TABLE(images), 'fft_convolve', '{"sigma": 3}')
 * SELECT * FROM pixelflight_map(TABLE(SELECT path, content FROM images WHERE ...), 'info')
 * SELECT * FROM pixelflight_map(TABLE(images), 'detect_faces', '{}', map('column', 'bytes', 'keep', 'id'))
 * </pre>
 *
 * <p>Arguments: the input as {@code TABLE(name)} or {@code TABLE(query)};
 * the op; its params as a JSON object (default {}); options as a
 * {@code map(...)} of strings: {@code column} (the binary image column,
 * default content), {@code keep} (a column name or a JSON array of names;
 * default every column but the image column), and the data source's strict,
 * endpoint, window, maxRows, maxBatchBytes, retrySeconds. Columns: the kept
 * columns, the op's result columns, error. Wrong arguments fail the query
 * on the driver, before any task runs, in the data source's words.
 *
 * <p>It is registered by {@link PixelflightExtensions}
 * (spark.sql.extensions), a table function of Spark's session extensions:
 * a table function is SQL, so one query text works from Scala, Java,
 * PySpark and Spark Connect clients alike, on Spark 3.5 and 4.x. The plan
 * it returns is the input's, mapped partition by partition
 * ({@link MapPartition}), so Spark runs the input's own plan (a file scan,
 * a Parquet table, a join) and this in the same tasks.
 */
final class MapFunction {
  static final String NAME = "pixelflight_map";
  static final String USAGE = NAME + "(TABLE(t), op[, params[, options]]) - runs a pixelflight op over the images "
      + "of t's binary column (options: map('column', 'content', 'keep', '[\"path\"]', 'strict', 'true', ...)) "
      + "through the executors' sidecars: one row per row of t, in order, with t's kept columns, the op's result "
      + "columns and error.";

  private MapFunction() {}

  /** The plan of a call: args as Spark's parser gives them, resolved. */
  static LogicalPlan build(scala.collection.Seq<Expression> args) {
    int n = args.length();
    if (n < 2 || n > 4) {
      throw new IllegalArgumentException(NAME + " takes 2 to 4 arguments, not " + n + ": " + USAGE);
    }
    if (!(args.apply(0) instanceof FunctionTableSubqueryArgumentExpression t)) {
      throw new IllegalArgumentException(NAME + "'s first argument must be TABLE(name) or TABLE(query), not "
          + args.apply(0).sql());
    }
    if (repartitions(t)) {
      throw new IllegalArgumentException(NAME + " takes TABLE(...) without PARTITION BY, ORDER BY or WITH SINGLE "
          + "PARTITION: sort or repartition inside the query, TABLE(SELECT ... ORDER BY ...)");
    }
    String op = string(args.apply(1), "op");
    String params = n > 2 ? string(args.apply(2), "params") : "{}";
    Map<String, String> options = n > 3 ? options(args.apply(3)) : Map.of();
    SparkSession spark = SparkSession.active();
    Dataset<Row> in = dataset(spark, t.plan());
    int most = sorted(t.plan()) ? 0 : partitions(spark, t.plan());
    if (most > 0) {
      in = in.coalesce(most); // never more than the input has
    }
    boolean caseSensitive = Boolean.parseBoolean(spark.conf().get("spark.sql.caseSensitive", "false"));
    MapOptions opts = new MapOptions(MapOptions.of(op, params, options), in.schema(), caseSensitive);
    MapPartition fn = new MapPartition(opts, ScanMetrics.accumulators(spark.sparkContext()));
    return logicalPlan(in.mapPartitions(fn, Encoders.row(opts.output)));
  }

  /**
   * At most how many tasks the input should take, as the data source packs
   * files (FileListing): about its size over
   * spark.sql.files.maxPartitionBytes, at least one per core; 0 when its
   * size is not known. An input straight from many small files (the
   * binaryFile source packs 44 KB images 31 to a task, by Spark's 4 MB
   * open cost each) is coalesced to that, each task then reading several
   * of its partitions: a Spark task costs some 10 ms of its own, an image
   * a few ms of the sidecar's. Rows keep their order within a task; across
   * tasks, as anywhere in Spark without ORDER BY, it is not defined (an
   * input that sorts is not coalesced).
   */
  static int partitions(SparkSession spark, LogicalPlan input) {
    java.math.BigInteger size;
    try {
      size = input.stats().sizeInBytes().bigInteger();
    } catch (RuntimeException noStats) {
      return 0;
    }
    long maxBytes = FileListing.bytes(spark.conf().get("spark.sql.files.maxPartitionBytes", "128m"));
    java.math.BigInteger n = size.divide(java.math.BigInteger.valueOf(Math.max(1, maxBytes))).add(java.math.BigInteger.ONE);
    if (n.bitLength() > 31) { // Spark's default size for what it cannot estimate is Long.MAX_VALUE
      return 0;
    }
    return Math.max(n.intValue(), spark.sparkContext().defaultParallelism());
  }

  /**
   * Whether TABLE(...) has PARTITION BY, ORDER BY or WITH SINGLE PARTITION
   * (Spark 4.x's hasRepartitioning; Spark 3.5 has none of them).
   */
  private static boolean repartitions(FunctionTableSubqueryArgumentExpression t) {
    try {
      return (Boolean) t.getClass().getMethod("hasRepartitioning").invoke(t);
    } catch (NoSuchMethodException spark35) {
      return false;
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException(e);
    }
  }

  /**
   * Whether the input's plan sorts its rows: it is then not coalesced,
   * whose grouping of partitions by their hosts would mix their order.
   */
  private static boolean sorted(LogicalPlan p) {
    if (p instanceof org.apache.spark.sql.catalyst.plans.logical.Sort) {
      return true;
    }
    scala.collection.Seq<LogicalPlan> c = p.children();
    for (int i = 0; i < c.length(); i++) {
      if (sorted(c.apply(i))) {
        return true;
      }
    }
    return false;
  }

  /** A constant string argument. */
  private static String string(Expression e, String what) {
    if (!e.foldable() || !(e.dataType() instanceof StringType)) {
      throw new IllegalArgumentException(NAME + ": " + what + " must be a constant string, not " + e.sql());
    }
    Object v = e.eval(null);
    if (v == null) {
      throw new IllegalArgumentException(NAME + ": " + what + " is null");
    }
    return v.toString();
  }

  /** A constant map(...) argument, its keys and values as strings. */
  private static Map<String, String> options(Expression e) {
    if (!e.foldable() || !(e.dataType() instanceof MapType m)) {
      throw new IllegalArgumentException(NAME + ": options must be a constant map('key', 'value', ...), not "
          + e.sql());
    }
    MapData d = (MapData) e.eval(null);
    Map<String, String> out = new LinkedHashMap<>();
    if (d == null) {
      return out;
    }
    ArrayData k = d.keyArray();
    ArrayData v = d.valueArray();
    for (int i = 0; i < d.numElements(); i++) {
      Object value = v.get(i, m.valueType());
      out.put(String.valueOf(k.get(i, m.keyType())), value == null ? null : value.toString());
    }
    return out;
  }

  /**
   * The input plan as a DataFrame: Dataset.ofRows, Spark's own way, which
   * is org.apache.spark.sql.Dataset's on Spark 3.5 and
   * org.apache.spark.sql.classic.Dataset's on 4.x (one source for both).
   */
  @SuppressWarnings("unchecked")
  private static Dataset<Row> dataset(SparkSession spark, LogicalPlan plan) {
    for (String name : new String[] {"org.apache.spark.sql.classic.Dataset", "org.apache.spark.sql.Dataset"}) {
      Class<?> c;
      try {
        c = Class.forName(name);
      } catch (ClassNotFoundException e) {
        continue;
      }
      for (Method m : c.getMethods()) {
        if (m.getName().equals("ofRows") && m.getParameterCount() == 2
            && m.getParameterTypes()[1] == LogicalPlan.class) {
          return (Dataset<Row>) invoke(m, null, spark, plan);
        }
      }
    }
    throw new IllegalStateException(NAME + ": this Spark has no Dataset.ofRows(SparkSession, LogicalPlan)");
  }

  /** A DataFrame's logical plan (Spark 3.5's Dataset and 4.x's classic Dataset both have logicalPlan()). */
  private static LogicalPlan logicalPlan(Dataset<Row> d) {
    try {
      return (LogicalPlan) invoke(d.getClass().getMethod("logicalPlan"), d);
    } catch (NoSuchMethodException e) {
      throw new IllegalStateException(NAME + ": this Spark's Dataset has no logicalPlan()", e);
    }
  }

  private static Object invoke(Method m, Object on, Object... args) {
    try {
      return m.invoke(on, args);
    } catch (IllegalAccessException e) {
      throw new IllegalStateException(e);
    } catch (InvocationTargetException e) {
      if (e.getCause() instanceof RuntimeException r) {
        throw r;
      }
      throw new IllegalStateException(e.getCause());
    }
  }
}
