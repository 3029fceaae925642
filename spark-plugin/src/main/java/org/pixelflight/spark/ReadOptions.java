package org.pixelflight.spark;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * The options of a pixelflight read, checked once on the driver; the
 * executors get them serialized with each task. See {@link ImageDataSource}
 * for the list.
 */
final class ReadOptions implements Serializable {
  private static final long serialVersionUID = 1L;
  private static final ObjectMapper JSON = new ObjectMapper();

  final List<String> paths;
  final String op;
  final String params; // a JSON object
  final boolean strict;
  final String endpoint; // null: resolved on the executor
  final int window;
  final int maxRows;
  final long maxBatchBytes;
  final long maxFileBytes;
  final double retrySeconds; // negative: from PIXELFLIGHT_RETRY_SECONDS on the executor, else 60
  final String pathGlobFilter;
  final boolean recursive;
  final String modifiedBefore;
  final String modifiedAfter;
  final Map<String, String> all; // every option, for fs.* Hadoop settings

  ReadOptions(CaseInsensitiveStringMap o) {
    paths = paths(o);
    op = o.get("op");
    if (op == null || op.isEmpty()) {
      throw new IllegalArgumentException("pixelflight: the option op is missing: want " + OpSchema.ops());
    }
    params = o.getOrDefault("params", "{}");
    JsonNode p;
    try {
      p = JSON.readTree(params);
    } catch (JsonProcessingException e) {
      throw new IllegalArgumentException("pixelflight: the option params is not JSON: " + e.getOriginalMessage(), e);
    }
    if (p == null || !p.isObject()) {
      throw new IllegalArgumentException("pixelflight: the option params must be a JSON object, not " + params);
    }
    try { // in map_images' words, before any task runs
      String ep = o.get("endpoint");
      ParamCheck.check(op, p, ep == null || ep.isEmpty() ? ParamCheck.pluginLimits(ReadOptions::sessionConf) : null);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("pixelflight: " + e.getMessage(), e);
    }
    OpSchema.of(op, p);
    strict = o.getBoolean("strict", false);
    endpoint = o.get("endpoint");
    window = positive(o, "window", 4);
    maxRows = positive(o, "maxRows", 64);
    maxBatchBytes = positive(o, "maxBatchBytes", 32L << 20);
    maxFileBytes = positive(o, "maxFileBytes", 128L << 20);
    retrySeconds = o.containsKey("retrySeconds") ? o.getDouble("retrySeconds", 0) : -1;
    if (o.containsKey("retrySeconds") && !(retrySeconds >= 0)) {
      throw new IllegalArgumentException("pixelflight: retrySeconds must be 0 or more (0: no retries)");
    }
    pathGlobFilter = o.get("pathGlobFilter");
    recursive = o.getBoolean("recursiveFileLookup", false);
    modifiedBefore = o.get("modifiedBefore");
    modifiedAfter = o.get("modifiedAfter");
    all = Map.copyOf(o.asCaseSensitiveMap());
  }

  /** A value of the active session's conf, or null (none set, or no session). */
  private static String sessionConf(String key) {
    try {
      return org.apache.spark.sql.SparkSession.active().conf().getOption(key).getOrElse(() -> null);
    } catch (IllegalStateException noSession) {
      return null;
    }
  }

  private static List<String> paths(CaseInsensitiveStringMap o) {
    List<String> out = new ArrayList<>();
    if (o.containsKey("path")) {
      out.add(o.get("path"));
    }
    if (o.containsKey("paths")) { // DataFrameReader.load(p1, p2, ...) passes a JSON array
      try {
        for (JsonNode n : JSON.readTree(o.get("paths"))) {
          out.add(n.asText());
        }
      } catch (JsonProcessingException e) {
        throw new IllegalArgumentException("pixelflight: the option paths is not a JSON array", e);
      }
    }
    if (out.isEmpty()) {
      throw new IllegalArgumentException("pixelflight: no path: load(path) or the option path");
    }
    return out;
  }

  private static int positive(CaseInsensitiveStringMap o, String key, int dflt) {
    long v = positive(o, key, (long) dflt);
    if (v > Integer.MAX_VALUE) {
      throw new IllegalArgumentException("pixelflight: the option " + key + " must be at most "
          + Integer.MAX_VALUE + ", not " + v);
    }
    return (int) v;
  }

  private static long positive(CaseInsensitiveStringMap o, String key, long dflt) {
    long v;
    try {
      v = o.getLong(key, dflt);
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException("pixelflight: the option " + key + " must be a whole number, not '"
          + o.get(key) + "'", e);
    }
    if (v <= 0) {
      throw new IllegalArgumentException("pixelflight: the option " + key + " must be positive, not " + v);
    }
    return v;
  }

  /** The op's result columns, error last. */
  StructType resultSchema() {
    try {
      return OpSchema.of(op, JSON.readTree(params));
    } catch (JsonProcessingException e) {
      throw new IllegalStateException(e); // checked in the constructor
    }
  }

  /** path, modificationTime, length, the op's result columns, error. */
  StructType schema() {
    StructType s = new StructType(new StructField[] {
        DataTypes.createStructField("path", DataTypes.StringType, false),
        DataTypes.createStructField("modificationTime", DataTypes.TimestampType, false),
        DataTypes.createStructField("length", DataTypes.LongType, false)});
    for (StructField f : resultSchema().fields()) {
      s = s.add(f);
    }
    return s;
  }

  /**
   * The Flight command: {"op", "column", "params", "strict"}, and "columns",
   * the result columns the sidecar sends (error always), when not all.
   */
  byte[] command(List<String> columns) {
    ObjectNode c = JSON.createObjectNode();
    c.put("op", op);
    c.put("column", "content");
    try {
      c.set("params", JSON.readTree(params));
      c.put("strict", strict);
      if (!columns.equals(Arrays.asList(resultSchema().fieldNames()))) {
        columns.forEach(c.putArray("columns")::add);
      }
      return JSON.writeValueAsBytes(c);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException(e);
    }
  }
}
