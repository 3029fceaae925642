package org.pixelflight.spark;

import java.util.ArrayList;
import java.util.List;

import com.fasterxml.jackson.databind.JsonNode;

import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * The result columns the sidecar returns for an op, the last being
 * {@code error}: the same rule as the Python client's
 * {@code pixelflight.client.result_schema} (tests/test_datasource.py checks
 * that the two agree for every op), so a query is planned without asking a
 * sidecar.
 */
final class OpSchema {
  static final String OPS = "echo, info, fft_convolve, detect_blobs, watershed or detect_faces";

  private OpSchema() {}

  static StructType of(String op, JsonNode params) {
    DataType i32 = DataTypes.IntegerType;
    DataType f64 = DataTypes.DoubleType;
    DataType bin = DataTypes.BinaryType;
    List<StructField> f = new ArrayList<>();
    switch (op) {
      case "echo" -> f.add(field("data", bin));
      case "info" -> {
        f.add(field("format", DataTypes.StringType));
        f.add(field("width", i32));
        f.add(field("height", i32));
        f.add(field("channels", i32));
      }
      case "fft_convolve" -> {
        String out = params.path("output").asText("");
        if (out.isEmpty()) { // absent, null or "": the sidecar's default
          out = "f32";
        }
        switch (out) {
          case "f32", "png" -> {
            f.add(field("height", i32));
            f.add(field("width", i32));
            f.add(field(out.equals("f32") ? "data" : "png", bin));
          }
          case "stats" -> {
            for (String n : new String[] {"min", "max", "mean", "std"}) {
              f.add(field(n, f64));
            }
          }
          default -> throw new IllegalArgumentException(
              "pixelflight: fft_convolve output '" + out + "': want f32, png or stats");
        }
      }
      case "detect_blobs" -> f.add(field("blobs", list(DataTypes.FloatType, "y", "x", "sigma")));
      case "watershed" -> {
        f.add(field("segments", i32));
        f.add(field("labels", bin));
      }
      case "detect_faces" -> {
        f.add(field("faces", list(i32, "x", "y", "w", "h", "neighbors")));
        if (params.path("annotate").asBoolean(false)) {
          f.add(field("annotated", bin));
        }
      }
      default -> throw new IllegalArgumentException("pixelflight: unknown op '" + op + "': want " + OPS);
    }
    f.add(field("error", DataTypes.StringType));
    return new StructType(f.toArray(new StructField[0]));
  }

  private static StructField field(String name, DataType t) {
    return DataTypes.createStructField(name, t, true);
  }

  /** A list of structs of non-null fields of one type, as the sidecar sends them. */
  private static DataType list(DataType t, String... names) {
    StructField[] fs = new StructField[names.length];
    for (int i = 0; i < names.length; i++) {
      fs[i] = DataTypes.createStructField(names[i], t, false);
    }
    return DataTypes.createArrayType(DataTypes.createStructType(fs), true);
  }
}
