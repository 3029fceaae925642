package org.pixelflight.spark;

import java.io.Serializable;
import java.util.Arrays;
import java.util.List;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * The options of a task's exchange with its sidecar, shared by the
 * {@code pixelflight} data source ({@link ReadOptions}) and the
 * {@code pixelflight_map} table function ({@link MapOptions}): the op, its
 * params (checked on the driver in map_images' words), strict, endpoint,
 * window, maxRows, maxBatchBytes and retrySeconds. Checked once on the
 * driver; the executors get them serialized with each task.
 */
abstract class ExchangeOptions implements Serializable {
  private static final long serialVersionUID = 1L;
  static final ObjectMapper JSON = new ObjectMapper();

  final String op;
  final String params; // a JSON object
  final boolean strict;
  final String endpoint; // null: resolved on the executor
  final int window;
  final int maxRows;
  final long maxBatchBytes;
  final double retrySeconds; // negative: from PIXELFLIGHT_RETRY_SECONDS on the executor, else 60

  ExchangeOptions(CaseInsensitiveStringMap o) {
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
      ParamCheck.check(op, p, ep == null || ep.isEmpty() ? ParamCheck.pluginLimits(ExchangeOptions::sessionConf) : null);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("pixelflight: " + e.getMessage(), e);
    }
    OpSchema.of(op, p);
    strict = o.getBoolean("strict", false);
    endpoint = o.get("endpoint");
    window = positive(o, "window", 4);
    maxRows = positive(o, "maxRows", 64);
    maxBatchBytes = positive(o, "maxBatchBytes", 32L << 20);
    retrySeconds = o.containsKey("retrySeconds") ? o.getDouble("retrySeconds", 0) : -1;
    if (o.containsKey("retrySeconds") && !(retrySeconds >= 0)) {
      throw new IllegalArgumentException("pixelflight: retrySeconds must be 0 or more (0: no retries)");
    }
  }

  /** A value of the active session's conf, or null (none set, or no session). */
  static String sessionConf(String key) {
    try {
      return org.apache.spark.sql.SparkSession.active().conf().getOption(key).getOrElse(() -> null);
    } catch (IllegalStateException noSession) {
      return null;
    }
  }

  static int positive(CaseInsensitiveStringMap o, String key, int dflt) {
    long v = positive(o, key, (long) dflt);
    if (v > Integer.MAX_VALUE) {
      throw new IllegalArgumentException("pixelflight: the option " + key + " must be at most "
          + Integer.MAX_VALUE + ", not " + v);
    }
    return (int) v;
  }

  static long positive(CaseInsensitiveStringMap o, String key, long dflt) {
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
