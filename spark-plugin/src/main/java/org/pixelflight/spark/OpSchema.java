package org.pixelflight.spark;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;

import com.fasterxml.jackson.databind.JsonNode;

import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * The result columns the sidecar returns for an op, the last being
 * {@code error}, from outputs.json (the sidecar's own list, generated from
 * its registry by tools/paramschema, packed into the jar from
 * python/pixelflight/), by the same rule as the Python client's
 * {@code pixelflight.client.result_schema} (tests/test_datasource.py checks
 * that the two agree for every op), so a query is planned without asking a
 * sidecar.
 */
final class OpSchema {
  /** outputs.json, read on first use: {op: {"fields"} or {"param", "param_type", "default", "values"}}. */
  private static final class Known {
    static final JsonNode OPS = ParamCheck.resource("outputs.json");
  }

  /** The ops, in words: "a, b or c". */
  static String ops() {
    return either(Known.OPS.fieldNames());
  }

  private OpSchema() {}

  static StructType of(String op, JsonNode params) {
    JsonNode out = op == null ? null : Known.OPS.get(op);
    if (out == null) {
      throw new IllegalArgumentException("pixelflight: unknown op '" + op + "': want " + ops());
    }
    JsonNode fields = out.get("fields");
    if (fields == null) { // chosen by one param's value
      String param = out.get("param").asText();
      JsonNode v = params.path(param);
      String value;
      if (out.get("param_type").asText().equals("bool")) {
        value = v.asBoolean(false) ? "true" : "false";
      } else {
        value = v.asText("");
        if (value.isEmpty()) { // absent, null or "": the sidecar's default
          value = out.get("default").asText();
        }
      }
      fields = out.get("values").get(value);
      if (fields == null) {
        throw new IllegalArgumentException(
            "pixelflight: " + op + " " + param + " '" + value + "': want " + either(out.get("values").fieldNames()));
      }
    }
    List<StructField> f = new ArrayList<>();
    fields.forEach(c -> f.add(field(c)));
    return new StructType(f.toArray(new StructField[0]));
  }

  /** A column of outputs.json: {"name", "type", "nullable"}, and "fields" for a list of structs. */
  private static StructField field(JsonNode f) {
    String name = f.get("name").asText();
    String type = f.get("type").asText();
    DataType t = switch (type) {
      case "int32" -> DataTypes.IntegerType;
      case "float32" -> DataTypes.FloatType;
      case "float64" -> DataTypes.DoubleType;
      case "string" -> DataTypes.StringType;
      case "binary" -> DataTypes.BinaryType;
      case "list<struct>" -> {
        List<StructField> fs = new ArrayList<>();
        f.get("fields").forEach(c -> fs.add(field(c)));
        yield DataTypes.createArrayType(DataTypes.createStructType(fs), true);
      }
      default -> throw new IllegalStateException(
          "pixelflight: outputs.json: column " + name + " of type " + type + ", which this plugin does not know");
    };
    return DataTypes.createStructField(name, t, f.get("nullable").asBoolean());
  }

  private static String either(Iterator<String> names) {
    List<String> n = new ArrayList<>();
    names.forEachRemaining(n::add);
    int last = n.size() - 1;
    return last < 1 ? String.join("", n) : String.join(", ", n.subList(0, last)) + " or " + n.get(last);
  }
}
